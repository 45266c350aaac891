"use client";

// The question the agent asks before a tool call runs (hitl_request): approve (optionally with edited arguments),
// or reject with a reason. The answer goes back as hitl_response with the request's id.

import { useState, type ReactNode } from "react";

import type { HitlRequest } from "@/lib/chat";
import type { JsonValue } from "@/lib/protocol";

export type ApprovalAnswer = {
  approved: boolean;
  reason?: string;
  modified_arguments?: { [key: string]: JsonValue };
  always_approve?: boolean;
};

type Props = {
  request: HitlRequest;
  waiting: number;
  onAnswer: (request: HitlRequest, answer: ApprovalAnswer) => Promise<void>;
};

export function ApprovalDialog({ request, waiting, onAnswer }: Props): ReactNode {
  const original = JSON.stringify(request.arguments ?? {}, null, 2);
  const [argumentsText, setArgumentsText] = useState(original);
  const [reason, setReason] = useState("");
  const [always, setAlways] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const edited = argumentsText.trim() !== original.trim();

  async function answer(value: ApprovalAnswer): Promise<void> {
    setBusy(true);
    try {
      await onAnswer(request, value);
    } finally {
      setBusy(false);
    }
  }

  function approve(): void {
    if (!edited) {
      void answer({ approved: true, always_approve: always || undefined });
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(argumentsText);
    } catch (error) {
      setProblem(`The arguments are not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      setProblem("The arguments must be a JSON object.");
      return;
    }
    void answer({
      approved: true,
      modified_arguments: parsed as { [key: string]: JsonValue },
      always_approve: always || undefined,
    });
  }

  function reject(): void {
    void answer({ approved: false, reason: reason.trim() || "Rejected in the web chat." });
  }

  return (
    <div className="overlay">
      <div className="dialog" role="dialog" aria-modal="true" aria-labelledby="approval-title" data-testid="approval-dialog">
        <h2 id="approval-title">
          Approve <code>{request.tool_name ?? request.action}</code>?
          {waiting > 1 && <span className="waiting"> ({waiting - 1} more waiting)</span>}
        </h2>
        <p className="description">{request.description}</p>
        <dl className="facts">
          <dt>Action</dt>
          <dd>{request.action}</dd>
          <dt>Target</dt>
          <dd>
            <code>{request.target}</code>
          </dd>
          {request.level && (
            <>
              <dt>Level</dt>
              <dd>{request.level}</dd>
            </>
          )}
        </dl>
        <label className="field">
          Arguments (JSON; edit them to approve a changed call)
          <textarea
            data-testid="approval-arguments"
            value={argumentsText}
            rows={Math.min(14, Math.max(4, argumentsText.split("\n").length + 1))}
            spellCheck={false}
            onChange={(event) => {
              setArgumentsText(event.target.value);
              setProblem(null);
            }}
          />
        </label>
        <label className="field">
          Reason (sent with a rejection)
          <input
            data-testid="approval-reason"
            value={reason}
            placeholder="Why not?"
            onChange={(event) => setReason(event.target.value)}
          />
        </label>
        <label className="check">
          <input type="checkbox" checked={always} onChange={(event) => setAlways(event.target.checked)} /> Always
          approve {request.tool_name ?? "this tool"} in this session
        </label>
        {problem && (
          <p className="dialog-problem" role="alert">
            {problem}
          </p>
        )}
        <div className="dialog-buttons">
          <button type="button" className="reject" data-testid="approval-reject" disabled={busy} onClick={reject}>
            Reject
          </button>
          <button type="button" className="approve" data-testid="approval-approve" disabled={busy} onClick={approve}>
            {edited ? "Approve edited call" : "Approve"}
          </button>
        </div>
      </div>
    </div>
  );
}
