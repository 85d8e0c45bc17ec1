import { afterAll, describe, expect, test } from "bun:test";
import { connectRedis } from "../../src/state/redis/connection.ts";
import { servicesSkipped } from "../helpers/redis-server.ts";
import { redisStates } from "../helpers/redis-state.ts";

/** The State on Redis while Redis goes away and comes back (issue 15, "Faults"). */
if (!servicesSkipped) {
  const redis = redisStates();
  afterAll(redis.close);
  const loaders = { seed: () => 0, balance: () => ({ balance: 1000, staleAt: Infinity }) };
  const rpm = { kind: "window", key: "w:rpm", windowMs: 60_000 } as const;

  describe("State on Redis: faults", () => {
    test("while Redis is down calls reject naming Redis; once it is back the same State serves again", async () => {
      const server = await redis.server();
      const state = await redis.state(loaders, () => Date.now());
      expect((await state.counts.admit([{ counter: rpm, limit: 10, add: 1 }], Date.now())).admitted).toBe(true);
      await server.stop();
      await expect(state.counts.admit([{ counter: rpm, limit: 10, add: 1 }], Date.now())).rejects.toThrow(/Redis/);
      await expect(state.keys.health(0, [{ id: 1, stored: { sleeping: false, reason: null, until: null, count: 0 } }])).rejects.toThrow(/Redis/);
      await expect(state.signups.take("x", Date.now())).rejects.toThrow(/Redis/);
      // Failing again and again does not wear the State out.
      for (let i = 0; i < 25; i++) await expect(state.counts.read(rpm, Date.now())).rejects.toThrow(/Redis/);
      await server.start();
      // An empty Redis (no persistence): the scripts are loaded again, the window starts afresh.
      expect((await state.counts.admit([{ counter: rpm, limit: 10, add: 1 }], Date.now())).admitted).toBe(true);
      expect(await state.counts.read(rpm, Date.now())).toBe(1);
    });

    test("an unreachable Redis is named in the error, and a password in its URL is not", async () => {
      const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
      const closedPort = probe.port;
      probe.stop(true);
      const connection = connectRedis(`redis://router:s3cret-pass@127.0.0.1:${closedPort}`, { connectTimeoutMs: 500 });
      const error = await connection.send("PING", []).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      connection.close();
      expect(error?.message).toMatch(/Redis/);
      expect(error?.message).not.toContain("s3cret");
    });

    test("a Redis that stops answering fails the call after the command timeout, and the next call connects afresh", async () => {
      const server = await redis.server();
      const connection = connectRedis(server.url, { commandTimeoutMs: 200 });
      await connection.send("PING", []);
      server.pause();
      try {
        await expect(connection.send("PING", [])).rejects.toThrow(/Redis PING failed: no answer within 200 ms/);
      } finally {
        server.resume();
      }
      expect(await connection.send("PING", [])).toBe("PONG");
      connection.close();
    });
  });
}
