// POST a protocol request (user_message, hitl_response, cancel, context_update, shutdown): written to the session's
// agent process as one JSON line on its stdin. What it causes arrives on the events stream.

import { getAgent } from "@/lib/agents";
import { REQUEST_TYPES, type AgentRequest } from "@/lib/protocol";

export const dynamic = "force-dynamic";

export async function POST(request: Request, { params }: { params: Promise<{ id: string }> }): Promise<Response> {
  const { id } = await params;
  const agent = getAgent(id);
  if (!agent) return Response.json({ error: `No session ${id} on this server.` }, { status: 404 });
  let body: unknown;
  try {
    body = await request.json();
  } catch {
    return Response.json({ error: "The body is not JSON." }, { status: 400 });
  }
  const type = (body as { type?: unknown } | null)?.type;
  if (typeof body !== "object" || body === null || Array.isArray(body) || typeof type !== "string") {
    return Response.json({ error: "A request is a JSON object with a type." }, { status: 400 });
  }
  if (!REQUEST_TYPES.has(type)) {
    return Response.json({ error: `Unknown request type ${JSON.stringify(type)}.` }, { status: 400 });
  }
  const problem = agent.send(body as AgentRequest);
  if (problem) return Response.json({ error: problem }, { status: 409 });
  return Response.json({ accepted: type }, { status: 202 });
}
