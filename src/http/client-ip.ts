import { metaOf } from "./context.ts";

/**
 * The client's address. Without --trust-proxy it is the socket peer, whatever
 * headers say. With it, the last X-Forwarded-For entry: the address our own
 * reverse proxy saw, which a client cannot forge by sending the header itself.
 */
export function clientIp(request: Request, trustProxy: boolean): string | undefined {
  const peer = metaOf(request)?.peerIp;
  if (!trustProxy) return peer;
  const forwarded = request.headers.get("x-forwarded-for");
  if (!forwarded) return peer;
  const last = forwarded.split(",").at(-1)?.trim();
  return last || peer;
}
