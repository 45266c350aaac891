// GET: the stored sessions (`ironhive sessions list -o json`) and the sessions this server runs.
// POST {resume?: id}: start the agent process of a new chat session, or of a stored one.

import { isSessionId, liveSessions, startSession, storedSessions } from "@/lib/agents";

export const dynamic = "force-dynamic";

export async function GET(): Promise<Response> {
  try {
    return Response.json({ stored: await storedSessions(), live: liveSessions() });
  } catch (error) {
    return Response.json({ error: error instanceof Error ? error.message : String(error) }, { status: 502 });
  }
}

export async function POST(request: Request): Promise<Response> {
  let body: unknown = {};
  const text = await request.text();
  if (text.trim()) {
    try {
      body = JSON.parse(text);
    } catch {
      return Response.json({ error: "The body is not JSON." }, { status: 400 });
    }
  }
  const resume = (body as { resume?: unknown } | null)?.resume;
  if (resume !== undefined && !isSessionId(resume)) {
    return Response.json({ error: "resume must be a session id." }, { status: 400 });
  }
  const agent = startSession(resume);
  return Response.json(agent.describe(), { status: 201 });
}
