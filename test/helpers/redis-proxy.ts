import type { Socket } from "bun";

/**
 * A TCP proxy between a State and Redis that loses Redis's answers, holds commands back
 * (a partition) and delivers them late, or refuses connections (Redis away): the faults
 * of test/unit/redis-repairs*.test.ts. Its mode applies to what each connection does
 * from then on.
 */
export type ProxyMode = "pass" | "lose answers" | "hold commands" | "refuse";

interface Link {
  upstream?: Socket<undefined>;
  held: Uint8Array[];
  holding: boolean;
}

export async function redisProxy(target: URL) {
  let mode: ProxyMode = "pass";
  const links = new Set<Link>();
  const server = Bun.listen<Link>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      async open(client) {
        const link: Link = { held: [], holding: false };
        client.data = link;
        if (mode === "refuse") {
          client.end();
          return;
        }
        links.add(link);
        link.upstream = await Bun.connect({
          hostname: target.hostname,
          port: Number(target.port),
          socket: {
            data(_, bytes) {
              if (mode !== "lose answers") client.write(bytes);
            },
            close() {
              client.end();
            },
          },
        });
        if (!link.holding) for (const bytes of link.held.splice(0)) link.upstream.write(bytes);
      },
      data(client, bytes) {
        const link = client.data;
        if (mode === "refuse") return;
        if (mode === "hold commands") link.holding = true;
        if (link.holding || !link.upstream) link.held.push(new Uint8Array(bytes));
        else link.upstream.write(bytes);
      },
      close(client) {
        if (!client.data.holding) client.data.upstream?.end();
      },
    },
  });
  return {
    url: `redis://127.0.0.1:${server.port}`,
    set(next: ProxyMode) {
      mode = next;
    },
    async deliverLate() {
      for (const link of links) {
        if (!link.holding) continue;
        link.holding = false;
        for (const bytes of link.held.splice(0)) link.upstream?.write(bytes);
      }
      await Bun.sleep(50);
      for (const link of links) link.upstream?.end();
    },
    stop() {
      server.stop(true);
      for (const link of links) link.upstream?.end();
    },
  };
}

