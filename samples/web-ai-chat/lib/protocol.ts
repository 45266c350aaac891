// The ironhive turn-stream protocol (JSON Lines over the `ironhive run --server` pipes) as TypeScript types,
// plus the two events this sample adds when it relays them: the agent process ending, and relay problems.
// Checked against the published JSON Schema (`ironhive protocol schema`) by tests/protocol/test_web_sample_types.py.

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export type AgentEvent =
  | { type: "session_started"; session_id: string }
  | { type: "text_delta"; content: string }
  | { type: "thinking_delta"; content: string }
  | { type: "addendum"; content: string }
  | { type: "tool_start"; tool: string; input: JsonValue; call_id: string | null }
  | { type: "tool_end"; tool: string; success: boolean; output: string | null; call_id: string | null }
  | {
      type: "hitl_request";
      id: string;
      action: string;
      target: string;
      description: string;
      tool_name?: string;
      arguments?: { [key: string]: JsonValue };
      call_id?: string;
      level?: string;
      scope?: string;
    }
  | {
      type: "turn_end";
      input_tokens: number | null;
      output_tokens: number | null;
      total_tokens: number | null;
      finish_reason?: string;
      cached_input_tokens?: number;
      reasoning_tokens?: number;
    }
  | { type: "error"; message: string }
  | {
      type: "fallback";
      kind: "retry" | "fallback" | "exhausted";
      provider_index: number;
      total_providers: number;
      category: string;
      message: string;
      attempt: number;
      max_attempts: number;
    }
  | { type: "agent_selected"; agent_name: string; confidence: number }
  | { type: "plan_created"; plan_id: string; step_count: number; step_descriptions: string[] }
  | { type: "plan_step_started"; plan_id: string; step_index: number; description: string }
  | { type: "plan_step_completed"; plan_id: string; step_index: number; success: boolean; summary: string }
  | { type: "plan_completed"; plan_id: string; success: boolean; summary: string }
  | {
      type: "context_compacted";
      tokens_before: number | null;
      tokens_after: number | null;
      messages_summarized: number | null;
      messages_dropped: number | null;
      summary_used: boolean;
      parts_cut: number;
      chars_cut: number;
    }
  | { type: "turn_restarted"; turn_id: string };

/** Written by this sample, never by ironhive: the agent process ended (or could not start). */
export type ProcessExitEvent = {
  type: "process_exit";
  code: number | null;
  signal: string | null;
  stderr: string;
  message: string;
};

/** Written by this sample, never by ironhive: a stdout line that was not a JSON object. */
export type RelayErrorEvent = { type: "relay_error"; message: string };

export type RelayedEvent = AgentEvent | ProcessExitEvent | RelayErrorEvent;

/** Per-turn overrides of a `user_message`; an unset field keeps the agent's configuration. */
export type TurnOptions = {
  tool_names?: string[];
  tool_mode?: string;
  reasoning_effort?: string;
  temperature?: number;
  max_output_tokens?: number;
};

export type AgentRequest =
  | { type: "user_message"; content: string; model?: string | null; options?: TurnOptions }
  | {
      type: "hitl_response";
      approved: boolean;
      reason?: string | null;
      id?: string;
      modified_arguments?: { [key: string]: JsonValue };
      always_approve?: boolean;
    }
  | { type: "cancel" }
  | { type: "context_update"; working_path?: string | null; selected_items?: string[] | null }
  | { type: "shutdown" };

export const REQUEST_TYPES: ReadonlySet<string> = new Set([
  "user_message",
  "hitl_response",
  "cancel",
  "context_update",
  "shutdown",
]);

/** One stored session as `ironhive sessions list -o json` prints it (camelCase, `firstMessage` omitted when none). */
export type StoredSession = {
  id: string;
  status: string;
  model: string;
  created: string;
  messageCount: number;
  firstMessage?: string;
};

/** A chat session whose agent process this server started (running, or ended and kept for its events). */
export type LiveSession = { id: string; pid: number | null; running: boolean; resumed: boolean };
