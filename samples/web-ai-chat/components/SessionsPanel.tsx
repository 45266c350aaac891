"use client";

// The stored sessions of the agent's folder (`ironhive sessions list -o json`) with a Resume button each. A sidebar
// on wide screens; below 700 px a drawer that the chat header's Sessions button opens (the chat keeps the width).

import type { ReactNode } from "react";

import type { LiveSession, StoredSession } from "@/lib/protocol";

type Props = {
  stored: StoredSession[];
  live: LiveSession[];
  current: string | null;
  loading: boolean;
  onRefresh: () => void;
  onNew: () => void;
  onResume: (id: string) => void;
  onClose: () => void;
};

export function SessionsPanel(props: Props): ReactNode {
  const { stored, live, current, loading, onRefresh, onNew, onResume, onClose } = props;
  const running = new Set(live.filter((session) => session.running).map((session) => session.id));
  return (
    <aside className="sessions" id="sessions-panel" data-testid="sessions">
      <div className="sessions-head">
        <h2>Sessions</h2>
        <div className="sessions-head-buttons">
          <button type="button" onClick={onRefresh} disabled={loading} data-testid="sessions-refresh">
            {loading ? "…" : "Refresh"}
          </button>
          <button
            type="button"
            className="sessions-close"
            aria-label="Close the sessions"
            onClick={onClose}
            data-testid="sessions-close"
          >
            ×
          </button>
        </div>
      </div>
      <button type="button" className="new-chat" onClick={onNew} data-testid="new-chat">
        + New chat
      </button>
      {stored.length === 0 && <p className="muted">No stored sessions yet.</p>}
      <ul>
        {stored.map((session) => (
          <li
            key={session.id}
            className={session.id === current ? "current" : undefined}
            data-testid="stored-session"
            data-session-id={session.id}
          >
            <div className="session-first">{session.firstMessage ?? "(no messages yet)"}</div>
            <div className="session-meta">
              {new Date(session.created).toLocaleString()} · {session.messageCount} messages
              {running.has(session.id) && <span className="live-dot" title="agent process running"> ● live</span>}
            </div>
            <div className="session-id">{session.id}</div>
            {session.id !== current && (
              <button type="button" onClick={() => onResume(session.id)} data-testid="resume-session">
                Resume
              </button>
            )}
          </li>
        ))}
      </ul>
    </aside>
  );
}
