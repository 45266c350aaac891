// DELETE: ask the session's agent process to finish its turns and exit (its events stay readable).

import { getAgent } from "@/lib/agents";

export const dynamic = "force-dynamic";

export async function DELETE(_request: Request, { params }: { params: Promise<{ id: string }> }): Promise<Response> {
  const { id } = await params;
  const agent = getAgent(id);
  if (!agent) return Response.json({ error: `No session ${id} on this server.` }, { status: 404 });
  agent.stop();
  return Response.json(agent.describe());
}
