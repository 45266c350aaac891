"use client";

// The chat page: one agent process per chat session on the server, its events over Server-Sent Events, requests
// (messages, approvals, cancel) posted back.

import { useCallback, useEffect, useReducer, useRef, useState, type FormEvent, type ReactNode } from "react";

import { chatReducer, initialChat, type Entry, type HitlRequest, type Usage } from "@/lib/chat";
import type { AgentRequest, LiveSession, RelayedEvent, StoredSession } from "@/lib/protocol";

import { ApprovalDialog, type ApprovalAnswer } from "./ApprovalDialog";
import { Markdown } from "./Markdown";
import { SessionsPanel } from "./SessionsPanel";
import { ToolCard } from "./ToolCard";

async function readJson<T>(response: Response): Promise<T> {
  const text = await response.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    throw new Error(`HTTP ${response.status}: ${text.slice(0, 200)}`);
  }
  if (!response.ok) {
    const message = (body as { error?: unknown } | null)?.error;
    throw new Error(typeof message === "string" ? message : `HTTP ${response.status}`);
  }
  return body as T;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export function Chat(): ReactNode {
  const [state, dispatch] = useReducer(chatReducer, initialChat);
  const [draft, setDraft] = useState("");
  const [stored, setStored] = useState<StoredSession[]>([]);
  const [live, setLive] = useState<LiveSession[]>([]);
  const [loadingSessions, setLoadingSessions] = useState(false);
  const [connection, setConnection] = useState<"connecting" | "open" | "lost">("connecting");
  // Only narrow screens use it: there the sessions are a drawer over the chat instead of a sidebar beside it.
  const [sessionsOpen, setSessionsOpen] = useState(false);
  const started = useRef(false);
  const bottom = useRef<HTMLDivElement>(null);
  const sessionId = state.sessionId;
  const generation = state.generation;

  const problem = useCallback((text: string, detail?: string) => dispatch({ type: "problem", text, detail }), []);

  const refreshSessions = useCallback(async () => {
    setLoadingSessions(true);
    try {
      const body = await readJson<{ stored: StoredSession[]; live: LiveSession[] }>(await fetch("/api/sessions"));
      setStored(body.stored);
      setLive(body.live);
    } catch (error) {
      problem(`Could not list the sessions: ${message(error)}`);
    } finally {
      setLoadingSessions(false);
    }
  }, [problem]);

  const openSession = useCallback(
    async (resume?: string) => {
      try {
        const response = await fetch("/api/sessions", {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify(resume ? { resume } : {}),
        });
        const session = await readJson<LiveSession>(response);
        const info = resume ? stored.find((candidate) => candidate.id === resume) : undefined;
        const note = info ? `It has ${info.messageCount} stored messages.` : undefined;
        dispatch({ type: "open", sessionId: session.id, resumed: session.resumed, note });
      } catch (error) {
        problem(`Could not start the agent: ${message(error)}`);
      }
    },
    [problem, stored],
  );

  useEffect(() => {
    if (started.current) return; // React's development double effect must not start two agents
    started.current = true;
    void openSession();
    void refreshSessions();
  }, [openSession, refreshSessions]);

  useEffect(() => {
    if (!sessionId) return;
    setConnection("connecting");
    const source = new EventSource(`/api/sessions/${encodeURIComponent(sessionId)}/events`);
    source.onopen = () => setConnection("open");
    source.onmessage = (event: MessageEvent<string>) => {
      const relayed = JSON.parse(event.data) as RelayedEvent;
      dispatch({ type: "event", event: relayed });
      if (["turn_end", "session_started", "process_exit"].includes(relayed.type)) void refreshSessions();
    };
    source.onerror = () => {
      // EventSource reconnects by itself (resuming after the last event id); CLOSED means it gave up.
      if (source.readyState === EventSource.CLOSED) {
        setConnection("lost");
        problem("The event stream of this session closed; the server may have restarted. Start a new chat.");
      } else {
        setConnection("connecting");
      }
    };
    return () => source.close();
  }, [sessionId, generation, problem, refreshSessions]);

  useEffect(() => {
    bottom.current?.scrollIntoView({ block: "end" });
  }, [state.entries]);

  useEffect(() => {
    if (!sessionsOpen) return;
    const close = (event: KeyboardEvent): void => {
      if (event.key === "Escape") setSessionsOpen(false);
    };
    window.addEventListener("keydown", close);
    return () => window.removeEventListener("keydown", close);
  }, [sessionsOpen]);

  const post = useCallback(
    async (request: AgentRequest): Promise<boolean> => {
      if (!sessionId) return false;
      try {
        await readJson(
          await fetch(`/api/sessions/${encodeURIComponent(sessionId)}/requests`, {
            method: "POST",
            headers: { "Content-Type": "application/json" },
            body: JSON.stringify(request),
          }),
        );
        return true;
      } catch (error) {
        problem(`The agent did not take the ${request.type} request: ${message(error)}`);
        return false;
      }
    },
    [sessionId, problem],
  );

  async function send(event?: FormEvent): Promise<void> {
    event?.preventDefault();
    const text = draft.trim();
    if (!text || state.running || !state.alive) return;
    dispatch({ type: "send", text });
    setDraft("");
    if (!(await post({ type: "user_message", content: text }))) {
      dispatch({ type: "event", event: { type: "turn_end", input_tokens: null, output_tokens: null, total_tokens: null } });
    }
  }

  async function stop(): Promise<void> {
    dispatch({ type: "stopping" });
    await post({ type: "cancel" });
  }

  async function answer(request: HitlRequest, value: ApprovalAnswer): Promise<void> {
    // Shown at once: the tool may well finish before the POST below returns.
    const decision = !value.approved ? "rejected" : value.modified_arguments ? "approved with edits" : "approved";
    dispatch({ type: "answered", id: request.id, decision, input: value.modified_arguments });
    await post({ type: "hitl_response", id: request.id, ...value });
  }

  const status = !sessionId
    ? "starting"
    : !state.alive
      ? "agent stopped"
      : connection !== "open"
        ? connection === "lost"
          ? "disconnected"
          : "connecting"
        : !state.ready
          ? "starting the agent"
          : state.running
            ? state.stopping
              ? "stopping"
              : "answering"
            : "ready";

  return (
    <div className={`layout${sessionsOpen ? " sessions-open" : ""}`}>
      <SessionsPanel
        stored={stored}
        live={live}
        current={sessionId}
        loading={loadingSessions}
        onRefresh={() => void refreshSessions()}
        onNew={() => {
          setSessionsOpen(false);
          void openSession();
        }}
        onResume={(id) => {
          setSessionsOpen(false);
          void openSession(id);
        }}
        onClose={() => setSessionsOpen(false)}
      />
      {sessionsOpen && (
        <div className="sessions-backdrop" aria-hidden="true" onClick={() => setSessionsOpen(false)} />
      )}
      <main className="chat" data-testid="chat">
        <header className="chat-head">
          <button
            type="button"
            className="sessions-toggle"
            aria-controls="sessions-panel"
            aria-expanded={sessionsOpen}
            onClick={() => setSessionsOpen((open) => !open)}
            data-testid="sessions-toggle"
          >
            Sessions
          </button>
          <div className="chat-title">
            <h1>ironhive web chat</h1>
            <div className="muted" data-testid="session-id">
              {sessionId ?? "no session"}
            </div>
          </div>
          <div className="head-right">
            <span className={`status status-${status.replace(/\s+/g, "-")}`} data-testid="status">
              {status}
            </span>
            <UsageLine last={state.lastUsage} total={state.totalTokens} />
          </div>
        </header>
        <div className="banners">
          {state.banners.map((banner) => (
            <div key={banner.key} className={`banner${banner.sticky ? " sticky" : ""}`} role="alert" data-testid="banner">
              <div className="banner-text">
                {banner.text}
                {banner.detail && <pre className="banner-detail">{banner.detail}</pre>}
              </div>
              <div className="banner-actions">
                {banner.sticky && sessionId && !state.alive && (
                  <button type="button" onClick={() => void openSession(sessionId)} data-testid="restart-agent">
                    Restart this session
                  </button>
                )}
                <button type="button" aria-label="Dismiss" onClick={() => dispatch({ type: "dismiss", key: banner.key })}>
                  ×
                </button>
              </div>
            </div>
          ))}
        </div>
        <div className="messages" data-testid="messages">
          {state.entries.map((entry) => (
            <EntryView key={entry.key} entry={entry} />
          ))}
          <div ref={bottom} />
        </div>
        <form className="composer" onSubmit={(event) => void send(event)}>
          <textarea
            data-testid="composer"
            value={draft}
            placeholder={state.alive ? "Message the agent (Enter sends, Shift+Enter adds a line)" : "The agent is not running"}
            rows={2}
            disabled={!state.alive}
            onChange={(event) => setDraft(event.target.value)}
            onKeyDown={(event) => {
              if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) void send(event);
            }}
          />
          <div className="composer-buttons">
            <button type="submit" data-testid="send" disabled={!draft.trim() || state.running || !state.alive}>
              Send
            </button>
            <button
              type="button"
              className="stop"
              data-testid="stop"
              disabled={!state.running || state.stopping || !state.alive}
              onClick={() => void stop()}
            >
              Stop
            </button>
          </div>
        </form>
      </main>
      {state.approvals.length > 0 && (
        <ApprovalDialog
          key={state.approvals[0].id}
          request={state.approvals[0]}
          waiting={state.approvals.length}
          onAnswer={answer}
        />
      )}
    </div>
  );
}

function UsageLine({ last, total }: { last: Usage | null; total: { input: number; output: number } }): ReactNode {
  if (!last) return <span className="usage muted">No tokens used yet</span>;
  const turn =
    last.total === null ? "tokens not reported" : `${last.total} tokens (${last.input ?? 0} in / ${last.output ?? 0} out)`;
  return (
    <span className="usage" data-testid="usage">
      Last turn: {turn} · Session: {total.input} in / {total.output} out tokens
    </span>
  );
}

function EntryView({ entry }: { entry: Entry }): ReactNode {
  switch (entry.kind) {
    case "user":
      return (
        <div className="message user" data-testid="user-message">
          {entry.text}
        </div>
      );
    case "system":
      return (
        <div className="message system" data-testid="system-message">
          {entry.text}
        </div>
      );
    case "assistant":
      return (
        <div
          className={`message assistant${entry.done ? "" : " streaming"}`}
          data-testid="assistant-message"
          data-done={entry.done}
          data-stopped={entry.stopped}
        >
          {entry.blocks.length === 0 && !entry.done && <span className="muted">…</span>}
          {entry.blocks.map((block) => {
            switch (block.kind) {
              case "text":
                return <Markdown key={block.key} source={block.text} />;
              case "thinking":
                return (
                  <details key={block.key} className="thinking" data-testid="thinking">
                    <summary>Thinking</summary>
                    <div className="thinking-text">{block.text}</div>
                  </details>
                );
              case "tool":
                return <ToolCard key={block.key} tool={block} />;
              case "notice":
                return (
                  <div key={block.key} className={`notice notice-${block.tone}`} data-testid="notice">
                    {block.text}
                  </div>
                );
            }
          })}
          {entry.done && (
            <div className="turn-foot muted" data-testid="turn-foot">
              {entry.stopped ? "Stopped. " : ""}
              {entry.usage?.total != null ? `${entry.usage.total} tokens` : ""}
            </div>
          )}
        </div>
      );
  }
}
