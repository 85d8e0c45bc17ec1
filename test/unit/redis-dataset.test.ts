import { afterAll, describe, expect, test } from "bun:test";
import { RedisClient } from "bun";
import { connectRedis } from "../../src/state/redis/connection.ts";
import { watchDataset } from "../../src/state/redis/dataset.ts";
import { servicesSkipped, startRedisServer, type RedisServer } from "../helpers/redis-server.ts";

/** Whether Redis still holds what a process counted before its connection was made again (src/state/redis/dataset.ts). */
let server: RedisServer | undefined;
afterAll(async () => server?.close());

if (!servicesSkipped)
  describe("dataset watch", () => {
    test("a dropped connection keeps the generation; a Redis that lost the marker moves it on, and what waited on the old one is dropped", async () => {
      server ??= await startRedisServer();
      const redis = connectRedis(server.url);
      const admin = new RedisClient(server.url);
      const key = `ds-test:${crypto.randomUUID()}`;
      try {
        const dataset = watchDataset(redis, key);
        // Unknown until a check went over the connection in use.
        expect(dataset.generation()).toBeUndefined();
        await dataset.check();
        const first = dataset.generation()!;
        expect(first).toBeDefined();

        await admin.send("CLIENT", ["KILL", "SKIPME", "yes", "TYPE", "normal"]);
        await Bun.sleep(20);
        // The next command connects again: unknown until checked, then the same generation.
        await redis.send("PING", []);
        expect(dataset.generation()).toBeUndefined();
        const ran: string[] = [];
        dataset.ifStill(first, () => ran.push("kept"));
        await dataset.settled();
        expect(ran).toEqual(["kept"]);
        expect(dataset.generation()).toBe(first);

        // As after a restart or a flush: the marker is gone.
        await admin.send("DEL", [key]);
        await admin.send("CLIENT", ["KILL", "SKIPME", "yes", "TYPE", "normal"]);
        await Bun.sleep(20);
        await redis.send("PING", []);
        dataset.ifStill(first, () => ran.push("dropped"));
        await dataset.settled();
        expect(ran).toEqual(["kept"]);
        expect(dataset.generation()).toBe(first + 1);
        // A later check over the same connection finds the marker it set.
        await dataset.check();
        expect(dataset.generation()).toBe(first + 1);

        // The marker expires on its own if the process dies; a clean stop removes it.
        expect(Number(await admin.send("PTTL", [key]))).toBeGreaterThan(60_000);
        await dataset.remove();
        expect(await admin.send("EXISTS", [key])).toBe(0);
      } finally {
        admin.close();
        redis.close();
      }
    });
  });
