/**
 * The floor: the least a Bun proxy can do, as the baseline the router is compared
 * with. `Bun.serve` + `fetch` to FLOOR_UPSTREAM, the body streamed back untouched.
 * Run in its own process; prints `floor listening on <url>`.
 */
const upstream = process.env.FLOOR_UPSTREAM!;
const authorization = `Bearer ${process.env.FLOOR_KEY ?? "sk-floor"}`;

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  idleTimeout: 0,
  async fetch(request) {
    const url = new URL(request.url);
    const headers = new Headers(request.headers);
    headers.delete("host");
    headers.delete("content-length");
    headers.delete("accept-encoding");
    headers.set("authorization", authorization);
    const response = await fetch(upstream + url.pathname + url.search, {
      method: request.method,
      headers,
      body: await request.arrayBuffer(),
    });
    const type = response.headers.get("content-type") ?? "application/json";
    return new Response(response.body, { status: response.status, headers: { "content-type": type } });
  },
});

console.log(`floor listening on http://127.0.0.1:${server.port}`);
