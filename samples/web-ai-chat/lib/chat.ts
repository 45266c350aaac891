// The page's state: the conversation built from relayed agent events (a pure reducer, no I/O).

import type { AgentEvent, JsonValue, RelayedEvent } from "./protocol";

export type HitlRequest = Extract<AgentEvent, { type: "hitl_request" }>;

export type ToolStatus = "running" | "awaiting" | "succeeded" | "failed";

export type ToolBlock = {
  kind: "tool";
  key: string;
  tool: string;
  input: JsonValue;
  callId: string | null;
  status: ToolStatus;
  output: string | null;
  decision: string | null;
};

export type Block =
  | { kind: "text"; key: string; text: string }
  | { kind: "thinking"; key: string; text: string }
  | { kind: "notice"; key: string; text: string; tone: "info" | "error" }
  | ToolBlock;

export type Usage = { input: number | null; output: number | null; total: number | null };

export type Entry =
  | { kind: "user"; key: string; text: string }
  | { kind: "assistant"; key: string; blocks: Block[]; done: boolean; stopped: boolean; usage: Usage | null }
  | { kind: "system"; key: string; text: string };

export type Banner = { key: string; text: string; detail?: string; sticky: boolean };

export type ChatState = {
  sessionId: string | null;
  ready: boolean;
  alive: boolean;
  running: boolean;
  stopping: boolean;
  entries: Entry[];
  approvals: HitlRequest[];
  banners: Banner[];
  lastUsage: Usage | null;
  totalTokens: { input: number; output: number };
  nextKey: number;
  /** Counts the agent processes this page opened; a restarted session is a new process with a new event stream. */
  generation: number;
};

export type ChatAction =
  | { type: "open"; sessionId: string; resumed: boolean; note?: string }
  | { type: "event"; event: RelayedEvent }
  | { type: "send"; text: string }
  | { type: "stopping" }
  | { type: "answered"; id: string; decision: string; input?: { [key: string]: JsonValue } }
  | { type: "problem"; text: string; detail?: string; sticky?: boolean }
  | { type: "dismiss"; key: string };

export const initialChat: ChatState = {
  sessionId: null,
  ready: false,
  alive: false,
  running: false,
  stopping: false,
  entries: [],
  approvals: [],
  banners: [],
  lastUsage: null,
  totalTokens: { input: 0, output: 0 },
  nextKey: 1,
  generation: 0,
};

export function chatReducer(state: ChatState, action: ChatAction): ChatState {
  switch (action.type) {
    case "open": {
      const text = action.resumed
        ? `Resumed session ${action.sessionId}: the agent has its earlier conversation.${action.note ? ` ${action.note}` : ""}`
        : `New session ${action.sessionId}.`;
      const opened = { ...initialChat, sessionId: action.sessionId, alive: true, generation: state.generation + 1 };
      return withEntry(opened, (key) => ({
        kind: "system",
        key,
        text,
      }));
    }
    case "send": {
      const withUser = withEntry(state, (key) => ({ kind: "user", key, text: action.text }));
      const next = withEntry(withUser, (key) => ({
        kind: "assistant",
        key,
        blocks: [],
        done: false,
        stopped: false,
        usage: null,
      }));
      return { ...next, running: true, stopping: false };
    }
    case "stopping":
      return { ...state, stopping: true };
    case "answered": {
      const key = toolKeyOf(state, action.id);
      return {
        ...state,
        approvals: state.approvals.filter((request) => request.id !== action.id),
        entries: updateTool(state.entries, (tool) => tool.key === key, (tool) => ({
          ...tool,
          status: "running",
          // An edited call is asked about again (the agent judges the new arguments); approving that question
          // keeps the record that the human edited it.
          decision: tool.decision === "approved with edits" && action.decision === "approved" ? tool.decision : action.decision,
          // modified_arguments replace the named arguments; the card shows the call as it will run.
          input: action.input && isObject(tool.input) ? { ...tool.input, ...action.input } : (action.input ?? tool.input),
        })),
      };
    }
    case "problem":
      return addBanner(state, action.text, action.detail, action.sticky ?? false);
    case "dismiss":
      return { ...state, banners: state.banners.filter((banner) => banner.key !== action.key) };
    case "event":
      return applyEvent(state, action.event);
  }
}

function applyEvent(state: ChatState, event: RelayedEvent): ChatState {
  switch (event.type) {
    case "session_started":
      return { ...state, ready: true };
    case "text_delta":
      return appendText(state, "text", event.content);
    case "thinking_delta":
      return appendText(state, "thinking", event.content);
    case "addendum":
      return addBlock(state, (key) => ({ kind: "notice", key, text: event.content, tone: "info" }));
    case "tool_start":
      return addBlock(state, (key) => ({
        kind: "tool",
        key,
        tool: event.tool,
        input: event.input,
        callId: event.call_id,
        status: "running",
        output: null,
        decision: null,
      }));
    case "hitl_request": {
      const waiting = { ...state, approvals: [...state.approvals, event] };
      const open = openTool(state.entries, event.call_id ?? null, event.tool_name ?? null);
      if (!open) return waiting;
      return {
        ...waiting,
        // tool_start carries no input (the protocol writes null); the question has the arguments.
        entries: updateTool(waiting.entries, (tool) => tool.key === open.key, (tool) => ({
          ...tool,
          status: "awaiting",
          input: tool.input ?? event.arguments ?? null,
        })),
      };
    }
    case "tool_end": {
      const open = openTool(state.entries, event.call_id, event.tool);
      const finished = (tool: ToolBlock): ToolBlock => ({
        ...tool,
        status: event.success ? "succeeded" : "failed",
        output: event.output,
      });
      if (open) return { ...state, entries: updateTool(state.entries, (tool) => tool.key === open.key, finished) };
      return addBlock(state, (key) =>
        finished({ kind: "tool", key, tool: event.tool, input: null, callId: event.call_id, status: "running", output: null, decision: null }),
      );
    }
    case "turn_end": {
      const usage = { input: event.input_tokens, output: event.output_tokens, total: event.total_tokens };
      const entries = state.entries.map((entry) =>
        entry.kind === "assistant" && !entry.done ? { ...entry, done: true, stopped: state.stopping, usage } : entry,
      );
      return {
        ...state,
        entries,
        running: false,
        stopping: false,
        approvals: [], // any question still open was answered "rejected" by the agent when the turn ended
        lastUsage: usage,
        totalTokens: {
          input: state.totalTokens.input + (event.input_tokens ?? 0),
          output: state.totalTokens.output + (event.output_tokens ?? 0),
        },
      };
    }
    case "error":
      return addBanner(
        addBlock(state, (key) => ({ kind: "notice", key, text: event.message, tone: "error" })),
        `Agent error: ${event.message}`,
        undefined,
        false,
      );
    case "relay_error":
      return addBanner(state, event.message, undefined, false);
    case "fallback":
      return addBlock(state, (key) => ({
        kind: "notice",
        key,
        text: `Provider ${event.kind} (${event.category}): ${event.message}`,
        tone: "info",
      }));
    case "context_compacted":
      return addBlock(state, (key) => ({
        kind: "notice",
        key,
        text: `Context compacted: ${event.tokens_before ?? "?"} → ${event.tokens_after ?? "?"} tokens.`,
        tone: "info",
      }));
    case "process_exit": {
      const entries = state.entries.map((entry) =>
        entry.kind === "assistant" && !entry.done ? { ...entry, done: true, stopped: true } : entry,
      );
      const stopped = { ...state, entries, alive: false, running: false, stopping: false, approvals: [] };
      return addBanner(stopped, event.message, event.stderr.trim() || undefined, true);
    }
    default:
      return state;
  }
}

function withEntry(state: ChatState, make: (key: string) => Entry): ChatState {
  return { ...state, entries: [...state.entries, make(`e${state.nextKey}`)], nextKey: state.nextKey + 1 };
}

function addBanner(state: ChatState, text: string, detail: string | undefined, sticky: boolean): ChatState {
  const banner: Banner = { key: `b${state.nextKey}`, text, detail, sticky };
  return { ...state, banners: [...state.banners, banner], nextKey: state.nextKey + 1 };
}

/** The assistant entry events go to: the open one, or a new one (events may arrive without a `send`, e.g. replays). */
function currentAssistant(state: ChatState): ChatState {
  const last = state.entries[state.entries.length - 1];
  if (last?.kind === "assistant" && !last.done) return state;
  return withEntry(state, (key) => ({ kind: "assistant", key, blocks: [], done: false, stopped: false, usage: null }));
}

function mapAssistant(state: ChatState, change: (blocks: Block[], key: string) => Block[]): ChatState {
  const ensured = currentAssistant(state);
  const entries = [...ensured.entries];
  const last = entries[entries.length - 1];
  if (last.kind !== "assistant") return ensured;
  entries[entries.length - 1] = { ...last, blocks: change(last.blocks, `k${ensured.nextKey}`) };
  return { ...ensured, entries, nextKey: ensured.nextKey + 1 };
}

function addBlock(state: ChatState, make: (key: string) => Block): ChatState {
  return mapAssistant(state, (blocks, key) => [...blocks, make(key)]);
}

function appendText(state: ChatState, kind: "text" | "thinking", text: string): ChatState {
  return mapAssistant(state, (blocks, key) => {
    const last = blocks[blocks.length - 1];
    if (last?.kind === kind) return [...blocks.slice(0, -1), { ...last, text: last.text + text }];
    return [...blocks, { kind, key, text }];
  });
}

function allTools(entries: Entry[]): ToolBlock[] {
  return entries.flatMap((entry) =>
    entry.kind === "assistant" ? entry.blocks.filter((block): block is ToolBlock => block.kind === "tool") : [],
  );
}

/** The latest unfinished tool card of this call (by call id when there is one, else by tool name). */
function openTool(entries: Entry[], callId: string | null, tool: string | null): ToolBlock | undefined {
  const open = allTools(entries).filter((block) => block.status === "running" || block.status === "awaiting");
  const byId = callId ? open.filter((block) => block.callId === callId) : [];
  const candidates = byId.length ? byId : open.filter((block) => tool === null || block.tool === tool);
  return candidates[candidates.length - 1];
}

function toolKeyOf(state: ChatState, requestId: string): string | undefined {
  const request = state.approvals.find((candidate) => candidate.id === requestId);
  if (!request) return undefined;
  return openTool(state.entries, request.call_id ?? null, request.tool_name ?? null)?.key;
}

function updateTool(entries: Entry[], match: (tool: ToolBlock) => boolean, change: (tool: ToolBlock) => ToolBlock): Entry[] {
  return entries.map((entry) =>
    entry.kind === "assistant"
      ? { ...entry, blocks: entry.blocks.map((block) => (block.kind === "tool" && match(block) ? change(block) : block)) }
      : entry,
  );
}

function isObject(value: JsonValue): value is { [key: string]: JsonValue } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
