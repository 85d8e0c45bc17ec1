import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createLocalBus, type Invalidation, type InvalidationBus } from "../../src/core/invalidation.ts";
import { createRedisBus, type RedisBus } from "../../src/state/redis/bus.ts";
import { connectRedis } from "../../src/state/redis/connection.ts";
import { servicesSkipped } from "../helpers/redis-server.ts";
import { freshPrefix, redisStates } from "../helpers/redis-state.ts";

/**
 * The contract every invalidation bus keeps (issue 14, item 6), run against each
 * implementation: in-process, and over Redis pub/sub (each bus on a prefix of its own,
 * so the Redis one is alone on its channel here; two processes are tested below).
 */
const redis = redisStates();
let redisUrl = "";
const buses: RedisBus[] = [];
afterAll(async () => {
  for (const bus of buses.splice(0)) bus.close();
  await redis.close();
});
const redisBus = (options: { prefix?: string; onError?: (error: unknown, event: Invalidation) => void; retryMs?: number } = {}) => {
  const bus = createRedisBus({ connection: connectRedis(redisUrl), prefix: options.prefix ?? freshPrefix(), onListenerError: options.onError, retryMs: options.retryMs });
  buses.push(bus);
  return bus;
};

const implementations: Array<[string, (onError?: (error: unknown, event: Invalidation) => void) => InvalidationBus]> = [["in-process", createLocalBus]];
if (!servicesSkipped) implementations.push(["redis", (onError) => redisBus({ onError })]);

describe.each(implementations)("invalidation bus: %s", (name, make) => {
  beforeAll(async () => {
    if (name === "redis") redisUrl = (await redis.server()).url;
  });

  test("every subscriber hears every event, in subscription order, before publish resolves", async () => {
    const bus = make();
    const heard: string[] = [];
    bus.subscribe((e) => {
      heard.push(`a:${e.kind}`);
    });
    bus.subscribe((e) => {
      heard.push(`b:${e.kind}`);
    });
    await bus.publish({ kind: "account", accountId: 7 });
    await bus.publish({ kind: "everything" });
    expect(heard).toEqual(["a:account", "b:account", "a:everything", "b:everything"]);
  });

  test("an unsubscribed listener hears nothing more; others go on", async () => {
    const bus = make();
    const heard: Invalidation[] = [];
    const stop = bus.subscribe((e) => {
      heard.push(e);
    });
    const other: Invalidation[] = [];
    bus.subscribe((e) => {
      other.push(e);
    });
    await bus.publish({ kind: "keys", tenantId: 0 });
    stop();
    await bus.publish({ kind: "config", tenantId: 3 });
    expect(heard).toEqual([{ kind: "keys", tenantId: 0 }]);
    expect(other).toEqual([{ kind: "keys", tenantId: 0 }, { kind: "config", tenantId: 3 }]);
  });

  test("a listener that throws is reported and does not keep the others from hearing", async () => {
    const errors: Array<[string, string]> = [];
    const bus = make((error, event) => errors.push([(error as Error).message, event.kind]));
    const heard: string[] = [];
    bus.subscribe(() => {
      throw new Error("broken cache");
    });
    bus.subscribe((e) => {
      heard.push(e.kind);
    });
    await bus.publish({ kind: "everything" });
    expect(heard).toEqual(["everything"]);
    expect(errors).toEqual([["broken cache", "everything"]]);
  });

  test("a listener added while an event is delivered hears the next one, not that one", async () => {
    const bus = make();
    const late: string[] = [];
    bus.subscribe(() => {
      bus.subscribe((e) => {
        late.push(e.kind);
      });
    });
    await bus.publish({ kind: "account", accountId: 1 });
    expect(late).toEqual([]);
  });

  test("publish waits for subscribers still at work; one that fails later is reported too", async () => {
    const errors: string[] = [];
    const bus = make((error) => errors.push((error as Error).message));
    const done: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    bus.subscribe(async () => {
      await gate;
      done.push("slow");
    });
    bus.subscribe(async () => {
      throw new Error("reload failed");
    });
    let resolved = false;
    const publishing = bus.publish({ kind: "keys", tenantId: 0 }).then(() => (resolved = true));
    await Bun.sleep(0);
    expect(resolved).toBe(false);
    release();
    await publishing;
    expect(done).toEqual(["slow"]);
    expect(errors).toEqual(["reload failed"]);
  });
});

/** Two processes on one Redis: two buses, each with its own connections, under one prefix. */
if (!servicesSkipped) {
  describe("invalidation bus: redis, two processes", () => {
    beforeAll(async () => {
      redisUrl = (await redis.server()).url;
    });

    const until = async (done: () => boolean) => {
      const deadline = Date.now() + 5000;
      while (!done() && Date.now() < deadline) await Bun.sleep(10);
      expect(done()).toBe(true);
    };

    test("an event published by one reaches the other's subscribers, and the publisher's own once", async () => {
      const prefix = freshPrefix();
      const a = redisBus({ prefix });
      const b = redisBus({ prefix });
      await Promise.all([a.ready(), b.ready()]);
      const heardA: Invalidation[] = [];
      const heardB: Invalidation[] = [];
      a.subscribe((e) => {
        heardA.push(e);
      });
      b.subscribe((e) => {
        heardB.push(e);
      });
      await a.publish({ kind: "account", accountId: 7 });
      await a.publish({ kind: "keys", tenantId: 2 });
      await until(() => heardB.length === 2);
      expect(heardB).toEqual([{ kind: "account", accountId: 7 }, { kind: "keys", tenantId: 2 }]);
      // Another deployment's prefix is another channel.
      const other = redisBus();
      await other.ready();
      await other.publish({ kind: "everything" });
      await b.publish({ kind: "config", tenantId: 1 });
      await until(() => heardA.length === 3);
      expect(heardA).toEqual([{ kind: "account", accountId: 7 }, { kind: "keys", tenantId: 2 }, { kind: "config", tenantId: 1 }]);
      expect(heardB).toHaveLength(3);
    });

    test("a subscriber that lost Redis hears everything once it is back; an event published meanwhile is sent again, the publish not failing", async () => {
      const server = await redis.server();
      const prefix = freshPrefix();
      const a = redisBus({ prefix, retryMs: 50 });
      const b = redisBus({ prefix, retryMs: 50 });
      await Promise.all([a.ready(), b.ready()]);
      const heardB: Invalidation[] = [];
      b.subscribe((e) => {
        heardB.push(e);
      });
      await server.stop();
      const heardA: Invalidation[] = [];
      a.subscribe((e) => {
        heardA.push(e);
      });
      // The publisher's own subscribers follow the change, and the write that published it
      // is not failed (its client would make it again): the others are told later.
      await a.publish({ kind: "account", accountId: 1 });
      expect(heardA).toEqual([{ kind: "account", accountId: 1 }]);
      await server.start();
      await until(() => heardB.some((e) => e.kind === "everything"));
      // Resubscribed: events flow again (a's connection is new too).
      await until(() => heardA.some((e) => e.kind === "everything"));
      await a.publish({ kind: "account", accountId: 2 });
      await until(() => heardB.some((e) => e.kind === "account" && e.accountId === 2));
      // The event of the outage, sent again, came before the next one (or B's subscription
      // was made after it went, and B dropped everything instead).
      const accounts = heardB.filter((e) => e.kind === "account").map((e) => (e as { accountId: number }).accountId);
      expect([[2], [1, 2]]).toContainEqual(accounts);
    });
  });
}
