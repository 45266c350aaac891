// GET: Server-Sent Events relaying the session's agent events, one `data:` JSON object each, numbered by `id:` so a
// reconnecting EventSource (Last-Event-ID) resumes where it stopped.

import { getAgent } from "@/lib/agents";

export const dynamic = "force-dynamic";

const KEEP_ALIVE_MS = 15_000;

export async function GET(request: Request, { params }: { params: Promise<{ id: string }> }): Promise<Response> {
  const { id } = await params;
  const agent = getAgent(id);
  if (!agent) return Response.json({ error: `No session ${id} on this server.` }, { status: 404 });
  const last = Number.parseInt(request.headers.get("last-event-id") ?? "", 10);
  const from = Number.isFinite(last) ? last + 1 : 0;
  const encoder = new TextEncoder();
  let stop = (): void => undefined;
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      const write = (text: string): void => {
        try {
          controller.enqueue(encoder.encode(text));
        } catch {
          stop(); // the browser went away
        }
      };
      const unsubscribe = agent.subscribe(from, (index, event) => write(`id: ${index}\ndata: ${JSON.stringify(event)}\n\n`));
      const keepAlive = setInterval(() => write(": keep-alive\n\n"), KEEP_ALIVE_MS);
      stop = () => {
        unsubscribe();
        clearInterval(keepAlive);
      };
      request.signal.addEventListener("abort", () => {
        stop();
        try {
          controller.close();
        } catch {
          // already closed
        }
      });
    },
    cancel() {
      stop();
    },
  });
  return new Response(stream, {
    headers: {
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-cache, no-transform",
      Connection: "keep-alive",
      "X-Accel-Buffering": "no",
    },
  });
}
