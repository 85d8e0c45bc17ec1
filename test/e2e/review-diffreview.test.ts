import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { addKey } from "../helpers/keys.ts";
import { skipServices, startPostgres, type PostgresServer } from "../helpers/postgres-server.ts";
import { startRedisServer, type RedisServer } from "../helpers/redis-server.ts";
import { startRouter, waitFor, type TestRouter } from "../helpers/router.ts";

/**
 * Review of the day's merged changes where they meet. A realtime upstream's failed
 * handshake is judged outside any request (the key's health, the Level's errors, another
 * key tried): with the State on Redis, those writes fail while Redis is away, and Bun ends
 * the process on a promise rejection nobody handles, taking every call in flight with it.
 */

const MODEL = "gpt-realtime-review";
const PRICING = { ChatPricing: { "*": { InputText: 0, OutputText: 0 }, [MODEL]: { InputText: 4, OutputText: 16 } } };

if (!skipServices) {
  describe("a realtime upstream refusing its handshake while Redis is away", () => {
    let postgres: PostgresServer;
    let redis: RedisServer;
    let router: TestRouter;
    let release: (() => void) | undefined;
    let reached: (() => void) | undefined;
    const upstream = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch() {
        // Held until the test has taken Redis away, then refused as a passing failure (5xx).
        reached?.();
        await new Promise<void>((resolve) => (release = resolve));
        return new Response("unavailable", { status: 503 });
      },
    });

    beforeAll(async () => {
      [postgres, redis] = await Promise.all([startPostgres(), startRedisServer()]);
      router = await startRouter({ pricing: PRICING, config: { database: postgres.url(await postgres.createDatabase()), redis: redis.url } });
      await addKey(router, { provider: `http://127.0.0.1:${upstream.port}/v1` });
    }, 60_000);
    afterAll(async () => {
      release?.();
      await router?.stop();
      upstream.stop(true);
      await redis?.close();
      await postgres?.stop();
    });

    test("the client gets upstream_unavailable (1011) and the router keeps serving", async () => {
      const dialled = new Promise<void>((resolve) => (reached = resolve));
      const events: Array<{ type: string; error?: { code?: string } }> = [];
      let closed: { code: number; reason: string } | undefined;
      const ws = new WebSocket(`${router.url.replace(/^http/, "ws")}/v1/realtime?model=${MODEL}`, { headers: { authorization: `Bearer ${router.ownerKey}` } } as unknown as string[]);
      ws.onmessage = (event) => events.push(JSON.parse(String(event.data)));
      ws.onclose = (event) => (closed = { code: event.code, reason: event.reason });
      // Admitted (Redis up), the upstream dialled: Redis goes, then the upstream refuses.
      await dialled;
      await redis.stop();
      release!();
      await waitFor(() => closed, 15_000, "the session to close");
      expect(closed!.code).toBe(1011);
      expect(events.map((e) => e.error?.code)).toContain("upstream_unavailable");
      // The process is still there: a management read that needs neither Redis nor the key.
      expect((await router.fetch("/healthz", { key: null })).status).toBe(200);
    }, 30_000);
  });
}
