// One tool call of a turn: from tool_start (running), through an approval question, to tool_end (success or not).

import type { ReactNode } from "react";

import type { ToolBlock } from "@/lib/chat";

const OUTPUT_PREVIEW_CHARS = 2000;

function statusLabel(tool: ToolBlock): string {
  switch (tool.status) {
    case "running":
      return tool.decision ? `Running (${tool.decision})` : "Running";
    case "awaiting":
      return "Waiting for approval";
    case "succeeded":
      return tool.decision ? `Succeeded (${tool.decision})` : "Succeeded";
    case "failed": {
      const output = tool.output ?? "";
      return /^(Approval rejected|Permission denied|Approval required)/.test(output) ? "Refused" : "Failed";
    }
  }
}

export function ToolCard({ tool }: { tool: ToolBlock }): ReactNode {
  const input = tool.input === null || tool.input === undefined ? "" : JSON.stringify(tool.input, null, 2);
  const output = tool.output ?? "";
  return (
    <div className={`tool-card tool-${tool.status}`} data-testid="tool-card" data-tool={tool.tool} data-status={tool.status}>
      <div className="tool-head">
        <span className="tool-name">{tool.tool}</span>
        <span className="tool-status" data-testid="tool-status">
          {statusLabel(tool)}
        </span>
      </div>
      {input && (
        <details className="tool-input">
          <summary>Arguments</summary>
          <pre>{input}</pre>
        </details>
      )}
      {output && (
        <pre className="tool-output" data-testid="tool-output">
          {output.length > OUTPUT_PREVIEW_CHARS ? `${output.slice(0, OUTPUT_PREVIEW_CHARS)}…` : output}
        </pre>
      )}
    </div>
  );
}
