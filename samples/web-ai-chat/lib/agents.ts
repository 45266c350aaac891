// Server side only: one long-lived `ironhive run --server` child process per chat session, its JSON Lines events
// kept and relayed to any number of listeners (the SSE route), and protocol requests written to its stdin.

import { execFile, spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { randomBytes } from "node:crypto";

import type { AgentRequest, LiveSession, RelayedEvent, StoredSession } from "./protocol";

const STDERR_TAIL_CHARS = 4000;
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/;

type Listener = (index: number, event: RelayedEvent) => void;

/** Where and how the agent runs: `IRONHIVE_PATH` (default `ironhive`), `IRONHIVE_ARGS`, `IRONHIVE_CWD`. */
export function agentSettings(): { command: string; args: string[]; cwd: string } {
  return {
    command: process.env.IRONHIVE_PATH?.trim() || "ironhive",
    args: splitArguments(process.env.IRONHIVE_ARGS ?? ""),
    cwd: process.env.IRONHIVE_CWD?.trim() || process.cwd(),
  };
}

/** Split `IRONHIVE_ARGS` like a shell would for plain words and quoted strings (no expansion: no shell runs). */
export function splitArguments(text: string): string[] {
  const words: string[] = [];
  const pattern = /"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g;
  for (const match of text.matchAll(pattern)) {
    words.push(match[1] !== undefined ? match[1].replace(/\\(.)/g, "$1") : (match[2] ?? match[3]));
  }
  return words;
}

export function isSessionId(value: unknown): value is string {
  return typeof value === "string" && SESSION_ID.test(value);
}

/** A new id sortable by creation time, in the form ironhive itself uses: `<unix ms in hex>-<8 random hex>`. */
function newSessionId(): string {
  return `${Date.now().toString(16)}-${randomBytes(4).toString("hex")}`;
}

/** One chat session's agent process. Its events are all kept, so a listener that (re)connects misses nothing. */
export class AgentProcess {
  readonly events: RelayedEvent[] = [];
  running = false;
  private child: ChildProcessWithoutNullStreams | null = null;
  private readonly listeners = new Set<Listener>();
  private stdoutRest = "";
  private stderrTail = "";
  private ended = false;

  constructor(
    readonly id: string,
    readonly resumed: boolean,
  ) {}

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  start(): void {
    const { command, args, cwd } = agentSettings();
    const argv = ["run", "--server", ...args, "--session-id", this.id];
    let child: ChildProcessWithoutNullStreams;
    try {
      // No shell: the command and its arguments go to the OS as they are.
      child = spawn(/*turbopackIgnore: true*/ command, argv, { cwd, env: process.env, stdio: ["pipe", "pipe", "pipe"] });
    } catch (error) {
      this.finish(null, null, `Could not start the agent (${command}): ${describe(error)}`);
      return;
    }
    this.child = child;
    this.running = true;
    child.stdout.setEncoding("utf8");
    child.stderr.setEncoding("utf8");
    child.stdout.on("data", (text: string) => this.readStdout(text));
    child.stderr.on("data", (text: string) => {
      this.stderrTail = (this.stderrTail + text).slice(-STDERR_TAIL_CHARS);
      process.stderr.write(`[ironhive ${this.id}] ${text}`);
    });
    // Writing to an agent that just died fails with EPIPE; its exit is reported by "close" below.
    child.stdin.on("error", () => undefined);
    child.on("error", (error) => {
      this.finish(null, null, `Could not start the agent (${command}): ${describe(error)}. Is IRONHIVE_PATH right?`);
    });
    child.on("close", (code, signal) => {
      if (this.stdoutRest.trim()) this.readLine(this.stdoutRest);
      this.stdoutRest = "";
      const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      this.finish(code, signal, `The agent process ${how}.`);
    });
  }

  /** Write one protocol request as a JSON line; returns an error message when the agent cannot take it. */
  send(request: AgentRequest): string | null {
    const stdin = this.child?.stdin;
    if (!this.running || !stdin || stdin.destroyed || !stdin.writable) {
      return "The agent process of this session is not running.";
    }
    stdin.write(`${JSON.stringify(request)}\n`);
    return null;
  }

  /** Ask the agent to finish its received turns and exit. */
  stop(): void {
    if (this.running) {
      this.send({ type: "shutdown" });
      this.child?.stdin.end();
    }
  }

  /** Replay the events from index `from` on, then every new one; returns the unsubscribe function. */
  subscribe(from: number, listener: Listener): () => void {
    for (let index = Math.max(0, from); index < this.events.length; index++) listener(index, this.events[index]);
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  describe(): LiveSession {
    return { id: this.id, pid: this.pid, running: this.running, resumed: this.resumed };
  }

  private readStdout(text: string): void {
    const lines = (this.stdoutRest + text).split("\n");
    this.stdoutRest = lines.pop() ?? "";
    for (const line of lines) if (line.trim()) this.readLine(line);
  }

  private readLine(line: string): void {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      value = undefined;
    }
    if (value !== null && typeof value === "object" && typeof (value as { type?: unknown }).type === "string") {
      this.emit(value as RelayedEvent);
    } else {
      this.emit({ type: "relay_error", message: `The agent wrote a line that is not an event: ${line.slice(0, 200)}` });
    }
  }

  private finish(code: number | null, signal: string | null, message: string): void {
    if (this.ended) return;
    this.ended = true;
    this.running = false;
    this.emit({ type: "process_exit", code, signal, stderr: this.stderrTail, message });
  }

  private emit(event: RelayedEvent): void {
    const index = this.events.push(event) - 1;
    for (const listener of this.listeners) listener(index, event);
  }
}

// On globalThis, not in a plain module variable: Next.js may bundle this module once per route, and every route must
// see the same processes.
const holder = globalThis as typeof globalThis & { __ironhiveAgents?: Map<string, AgentProcess> };
const agents: Map<string, AgentProcess> = (holder.__ironhiveAgents ??= new Map());

export function getAgent(id: string): AgentProcess | undefined {
  return agents.get(id);
}

export function liveSessions(): LiveSession[] {
  return [...agents.values()].map((agent) => agent.describe());
}

/**
 * Start the agent process of a new chat session, or of a stored one (`resume`: `run --server --session-id <id>`
 * restores its conversation). A session whose process still runs is returned as it is.
 */
export function startSession(resume?: string): AgentProcess {
  if (resume !== undefined) {
    const existing = agents.get(resume);
    if (existing?.running) return existing;
  }
  const agent = new AgentProcess(resume ?? newSessionId(), resume !== undefined);
  agents.set(agent.id, agent);
  agent.start();
  return agent;
}

/** The stored sessions of the agent's folder, from `ironhive sessions list -o json`. */
export function storedSessions(limit = 20): Promise<StoredSession[]> {
  const { command, cwd } = agentSettings();
  return new Promise((resolve, reject) => {
    execFile(
      /*turbopackIgnore: true*/ command,
      ["sessions", "list", "-o", "json", "-n", String(limit)],
      { cwd, env: process.env, timeout: 60_000, maxBuffer: 4 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) {
          const detail = String(stderr || stdout).trim() || describe(error);
          reject(new Error(`ironhive sessions list failed: ${detail}`));
          return;
        }
        try {
          const parsed: unknown = JSON.parse(stdout);
          if (!Array.isArray(parsed)) throw new Error("not a JSON array");
          resolve(parsed as StoredSession[]);
        } catch (parseError) {
          reject(new Error(`ironhive sessions list printed unreadable JSON: ${describe(parseError)}`));
        }
      },
    );
  });
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
