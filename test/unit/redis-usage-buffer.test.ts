import { afterAll, describe, expect, test } from "bun:test";
import { RedisClient } from "bun";
import { settled } from "../../src/metering/usage-writer.ts";
import { connectRedis } from "../../src/state/redis/connection.ts";
import { durabilityWarnings, readDurability } from "../../src/state/redis/durability.ts";
import { createSentRows } from "../../src/state/redis/sent-rows.ts";
import { createRedisUsageBuffer } from "../../src/state/redis/usage-buffer.ts";
import { usageRowIdentity, type NewUsageEventRow } from "../../src/store/store.ts";
import { servicesSkipped } from "../helpers/redis-server.ts";
import { freshPrefix, redisStates } from "../helpers/redis-state.ts";

const row = (requestId: string, createdAt = 1_000): NewUsageEventRow => ({
  requestId,
  accountId: 7,
  day: "2026-11-27",
  createdAt,
  endpoint: "/v1/chat/completions",
  status: 200,
  source: "upstream",
  latencyMs: 5,
  costNanos: 100,
});

describe("a checked batch: rows written once, charges released once", () => {
  test("stored rows are not written; their charge is released unless the row is a copy; a row repeated in the batch counts once", () => {
    const [a, b, c, aCopy, cCopy, d] = [row("a"), row("b"), row("c"), row("a"), row("c"), row("d")];
    const stored = new Set([usageRowIdentity(a), usageRowIdentity(b)]);
    const copies = new Set([aCopy, cCopy]);
    const { fresh, released } = settled([a, b, c, aCopy, cCopy, d], stored, { copies });
    expect(fresh).toEqual([c, d]);
    // a and b were written before (their charge is in the ledger now); c's copy repeats c.
    expect(released).toEqual([a, b, c, d]);
    // A copy alone, stored already: the row it copies released its charge.
    expect(settled([aCopy], stored, { copies })).toEqual({ fresh: [], released: [] });
    // A copy stored by this process's own write whose commit answer was lost: nobody else released it.
    const writers = new Map([[usageRowIdentity(aCopy), "me"]]);
    expect(settled([aCopy], stored, { copies, writers, self: "me" })).toEqual({ fresh: [], released: [aCopy] });
    // ...and stored by another process's copy: that write released it.
    expect(settled([aCopy], stored, { copies, writers, self: "another" })).toEqual({ fresh: [], released: [] });
    // A copy alone, not stored (Redis lost the row it copies): written and released.
    expect(settled([cCopy], stored, { copies })).toEqual({ fresh: [cCopy], released: [cCopy] });
    // A realtime session's responses share a request id: distinct rows by their time.
    expect(settled([row("s", 1), row("s", 2)], new Set()).fresh).toHaveLength(2);
  });

  test("an original found stored as a copy releases nothing: the copy, written first, released its charge", () => {
    const [a, b] = [row("a"), row("b")];
    const stored = new Set([usageRowIdentity(a), usageRowIdentity(b)]);
    const writers = new Map([[usageRowIdentity(a), "another"]]);
    expect(settled([a, b], stored, { writers, self: "me" })).toEqual({ fresh: [], released: [b] });
    // Even when this process's own write of it failed: that write did not commit (the copy was written first).
    expect(settled([a], stored, { writers: new Map([[usageRowIdentity(a), "me"]]), self: "me" })).toEqual({ fresh: [], released: [] });
  });
});

describe("rows sent lately", () => {
  test("a live connection's rows are kept for the window; a lost connection's until taken, then its last window of them", () => {
    const sent = createSentRows(10_000);
    for (let i = 0; i < 3000; i++) sent.add(`r${i}`, i * 10, 1);
    // At 29,990 ms the window holds rows sent from 19,990 ms: r1999 to r2999.
    expect(sent.size).toBe(1001);
    // Connection 1 is lost; Redis comes back a minute later on connection 2.
    sent.add("late", 90_000, 2);
    expect(sent.size).toBe(1002);
    const again = sent.before(2).map((row) => row.text);
    expect(again).toHaveLength(1001);
    expect(again[0]).toBe("r1999");
    expect(again.at(-1)).toBe("r2999");
    // Until forgotten (sent), they are handed out again.
    expect(sent.before(2)).toHaveLength(1001);
    sent.forget(2);
    expect(sent.before(2)).toEqual([]);
    // Each with the dataset's generation it was sent in (0: not known).
    expect(sent.before(3)).toEqual([{ text: "late", generation: 0 }]);
    sent.forget(3);
    expect(sent.size).toBe(0);
  });

  test("rows of the connection in use sent in an earlier generation (a FLUSHALL) are handed out, the last window of them, and forgotten once sent", () => {
    const sent = createSentRows(10_000);
    sent.add("old connection", 0, 1, 1);
    sent.add("a", 1000, 2, 1);
    sent.add("b", 2000, 2, 1);
    sent.add("unknown", 2500, 2, 0);
    sent.add("after", 3000, 2, 2);
    // The old connection's rows are `before`'s; generation 0 is not known to be lost.
    expect(sent.ofEarlierGeneration(2, 2)).toEqual(["a", "b"]);
    sent.forgetEarlierGeneration(2, 2);
    expect(sent.ofEarlierGeneration(2, 2)).toEqual([]);
    expect(sent.before(3).map((row) => row.text)).toEqual(["old connection", "unknown", "after"]);
  });
});

describe("what Redis says of how it keeps data", () => {
  test("no persistence, no eviction limit, eviction that can drop rows: each named with what to set", () => {
    expect(durabilityWarnings({ maxMemory: 0, evictionPolicy: "noeviction", appendOnly: true, snapshots: true })).toEqual([]);
    expect(durabilityWarnings({ maxMemory: 0, evictionPolicy: "allkeys-lru", appendOnly: true })).toEqual([]);
    const [evicting] = durabilityWarnings({ maxMemory: 1e8, evictionPolicy: "allkeys-lru", appendOnly: true });
    expect(evicting).toContain("maxmemory-policy allkeys-lru");
    expect(evicting).toContain("usage rows");
    expect(evicting).toContain("set maxmemory-policy noeviction");
    expect(durabilityWarnings({ maxMemory: 1e8, evictionPolicy: "volatile-lru", appendOnly: true })[0]).toContain("rate windows");
    const [noAof] = durabilityWarnings({ maxMemory: 0, evictionPolicy: "noeviction", appendOnly: false, snapshots: false });
    expect(noAof).toContain("appendonly no");
    expect(noAof).toContain("everything it holds");
    expect(noAof).toContain("set appendonly yes");
    expect(durabilityWarnings({ appendOnly: false, snapshots: undefined })[0]).toContain("since its last snapshot");
  });
});

if (!servicesSkipped) {
  const redis = redisStates();
  afterAll(redis.close);
  const loaders = { seed: () => 0, balance: () => ({ balance: 1000, staleAt: Infinity }) };
  /**
   * A process's usage buffer and its State over a connection of the test's, on a prefix
   * of their own, or on `prefix` to share another process's buffer.
   */
  const bufferOnFreshPrefix = async (prefix = freshPrefix()) => {
    const server = await redis.server();
    const connection = connectRedis(server.url);
    const state = await redis.state(loaders, () => Date.now(), { prefix });
    return { server, prefix, connection, state, buffer: createRedisUsageBuffer({ connection, state, prefix }) };
  };
  /** Rows appended, then Redis restarted without them. */
  const appendThenRestart = async (instance: Awaited<ReturnType<typeof bufferOnFreshPrefix>>, ids: readonly string[]) => {
    for (const id of ids) await instance.buffer.append(row(id));
    await instance.server.stop();
    await instance.server.start();
  };

  describe("the usage buffer on Redis, when Redis loses or rolls back what it acknowledged", () => {
    test("the test server's settings are read as they are: no AOF, no save points; a memory limit with allkeys eviction is named", async () => {
      const server = await redis.server();
      const connection = connectRedis(server.url);
      try {
        const durability = await readDurability(connection);
        expect(durability).toMatchObject({ appendOnly: false, snapshots: false, evictionPolicy: "noeviction", maxMemory: 0 });
        await connection.send("CONFIG", ["SET", "maxmemory", "100mb"]);
        await connection.send("CONFIG", ["SET", "maxmemory-policy", "allkeys-lru"]);
        expect(durabilityWarnings(await readDurability(connection)).join("\n")).toContain("maxmemory-policy allkeys-lru");
      } finally {
        await connection.send("CONFIG", ["SET", "maxmemory", "0"]).catch(() => {});
        await connection.send("CONFIG", ["SET", "maxmemory-policy", "noeviction"]).catch(() => {});
        connection.close();
      }
    });

    test("after Redis restarts empty, the rows sent lately are queued again as copies whose charge is not held (it went with the data), and claims are checked until the queue is empty", async () => {
      const instance = await bufferOnFreshPrefix();
      const { connection, buffer } = instance;
      try {
        await appendThenRestart(instance, ["a", "b", "c"]);
        // The first row after the restart reaches the new Redis (and is not sent again); the three before are gone from it.
        // It is appended once they are queued again: the new Redis lacks this process's dataset marker, so the append waits for the check.
        await buffer.append(row("d"));
        const { rows, waiting } = await buffer.claim(100);
        expect(waiting).toBe(0);
        expect(rows.map((r) => [r.requestId, r.retried === true, r.copy === true, r.unheld === true])).toEqual([
          ["a", true, true, true],
          ["b", true, true, true],
          ["c", true, true, true],
          ["d", true, false, false],
        ]);
        await buffer.done(new Map(), 1);
        // The queue was left empty: later claims are not checked.
        await buffer.append(row("e"));
        expect((await buffer.claim(100)).rows.map((r) => [r.requestId, r.retried === true])).toEqual([["e", false]]);
      } finally {
        connection.close();
      }
    });

    test("a claim that makes the connection again sends the rows before it again at once, and claims them", async () => {
      const instance = await bufferOnFreshPrefix();
      const { connection, buffer } = instance;
      try {
        await appendThenRestart(instance, ["a", "b"]);
        // The process's first call after the restart is a claim (a flush while stopping may be its last call).
        const { rows } = await buffer.claim(100);
        expect(rows.map((r) => [r.requestId, r.retried === true, r.copy === true, r.unheld === true])).toEqual([
          ["a", true, true, true],
          ["b", true, true, true],
        ]);
      } finally {
        connection.close();
      }
    });

    test("copies handed back by a stopping process are claimed again as copies (flagged once, readable; one whose charge is not held stays so)", async () => {
      const instance = await bufferOnFreshPrefix();
      const { server, prefix, connection, buffer } = instance;
      const { connection: otherConnection, buffer: otherBuffer } = await bufferOnFreshPrefix(prefix);
      const admin = new RedisClient(server.url);
      try {
        await appendThenRestart(instance, ["a", "b"]);
        // The copies are claimed; the database is away, so the claim is not done; the process stops.
        expect((await buffer.claim(100)).rows.map((r) => r.requestId)).toEqual(["a", "b"]);
        await buffer.release();
        // A copy handed back by an older version carries both flags.
        await admin.send("RPUSH", [`${prefix}usage:queue`, `RS${JSON.stringify(row("c"))}`]);
        const { rows } = await otherBuffer.claim(100);
        expect(rows.map((r) => [r.requestId, r.retried === true, r.copy === true, r.unheld === true])).toEqual([
          ["a", true, true, true],
          ["b", true, true, true],
          ["c", true, true, false],
        ]);
      } finally {
        admin.close();
        otherConnection.close();
        connection.close();
      }
    });

    test("a claim has an id: the same when retried or taken over, a new one for the next claim; rows handed back leave it behind; an unsure row comes back checked", async () => {
      const instance = await bufferOnFreshPrefix();
      const { server, prefix, connection, buffer } = instance;
      const { connection: otherConnection, buffer: otherBuffer } = await bufferOnFreshPrefix(prefix);
      const admin = new RedisClient(server.url);
      try {
        await buffer.append(row("a"));
        await buffer.append(row("b"), "unsure");
        const first = await buffer.claim(100);
        expect(first.claim).toMatch(/^#\d+\.\d+\.\d+$/);
        expect([first.retry, first.rows.map((r) => [r.requestId, r.retried === true, r.copy === true])]).toEqual([false, [["a", false, false], ["b", true, false]]]);
        // Not done: the next claim is the same one, retried.
        const again = await buffer.claim(100);
        expect([again.claim, again.retry, again.rows.map((r) => r.requestId)]).toEqual([first.claim, true, ["a", "b"]]);
        // Handed back: the rows go to the queue without the id, and the next claim has a new one.
        await buffer.release();
        expect(((await admin.send("LRANGE", [`${prefix}usage:queue`, "0", "-1"])) as string[]).some((text) => text.startsWith("#"))).toBe(false);
        const other = await otherBuffer.claim(100);
        expect(other.claim).toMatch(/^#/);
        expect(other.claim).not.toBe(first.claim);
        expect(other.rows.map((r) => r.requestId)).toEqual(["a", "b"]);
      } finally {
        admin.close();
        otherConnection.close();
        connection.close();
      }
    });

    test("a claim says how many rows other processes' claims hold (not their ids), whoever holds them and whatever the claim finds", async () => {
      const { prefix, connection, buffer } = await bufferOnFreshPrefix();
      const { connection: otherConnection, buffer: otherBuffer } = await bufferOnFreshPrefix(prefix);
      const { connection: thirdConnection, buffer: thirdBuffer } = await bufferOnFreshPrefix(prefix);
      try {
        for (const id of ["a", "b", "c"]) await buffer.append(row(id));
        // This process claims three rows; two more arrive, and another process claims them (its write fails: it keeps them).
        expect(await buffer.claim(100)).toMatchObject({ waiting: 0, elsewhere: 0 });
        for (const id of ["d", "e"]) await buffer.append(row(id));
        const other = await otherBuffer.claim(100);
        expect(other).toMatchObject({ waiting: 0, elsewhere: 3 });
        expect(other.rows).toHaveLength(2);
        // Retried, this process's claim sees the other's two rows; a third process with nothing to claim sees all five.
        expect(await buffer.claim(100)).toMatchObject({ retry: true, waiting: 0, elsewhere: 2 });
        expect(await thirdBuffer.claim(100)).toMatchObject({ rows: [], waiting: 0, elsewhere: 5 });
        // Written and cleared, a claim no longer counts.
        await otherBuffer.done(new Map(), undefined);
        expect(await thirdBuffer.claim(100)).toMatchObject({ rows: [], elsewhere: 3 });
      } finally {
        thirdConnection.close();
        otherConnection.close();
        connection.close();
      }
    });

    test("copies queued again after one restart are queued again after a second one, before any was claimed", async () => {
      const instance = await bufferOnFreshPrefix();
      const { server, connection, buffer } = instance;
      try {
        await appendThenRestart(instance, ["a", "b"]);
        // The first row after the restart makes the connection again; the next notices it
        // and queues the two rows before it again, as copies.
        await buffer.append(row("c"));
        await buffer.append(row("e"));
        // The copies are lost with the second restart, before any writer claimed them.
        await server.stop();
        await server.start();
        await buffer.append(row("d"));
        const { rows } = await buffer.claim(100);
        expect(rows.map((r) => [r.requestId, r.copy === true, r.unheld === true]).sort()).toEqual([
          ["a", true, true],
          ["b", true, true],
          ["c", true, true],
          ["d", false, false],
          ["e", true, true],
        ]);
      } finally {
        connection.close();
      }
    });

    test("a process that claims rows renews its lease: a lease lost with Redis does not let another take over a claim being written", async () => {
      const { server, prefix, connection, state, buffer } = await bufferOnFreshPrefix();
      const { connection: otherConnection, buffer: otherBuffer } = await bufferOnFreshPrefix(prefix);
      const admin = new RedisClient(server.url);
      try {
        // What a restart leaves until the next heartbeat: no lease for this process.
        await admin.send("DEL", [`${prefix}lease:${state.owner}`]);
        await buffer.append(row("mine"));
        expect((await buffer.claim(100)).rows.map((r) => r.requestId)).toEqual(["mine"]);
        // The claim's writer is alive: the other process finds nothing to take.
        expect((await otherBuffer.claim(100)).rows).toEqual([]);
        // Still this process's claim: its id, then its row.
        const held = (await admin.send("LRANGE", [`${prefix}usage:claim:${state.owner}`, "0", "-1"])) as string[];
        expect(held.filter((text) => !text.startsWith("#"))).toHaveLength(1);
      } finally {
        admin.close();
        otherConnection.close();
        connection.close();
      }
    });

    test("after the connection is made again, rows already written that reappear in the queue (a rolled-back claim) come back checked", async () => {
      const { server, prefix, connection, buffer } = await bufferOnFreshPrefix();
      const admin = new RedisClient(server.url);
      try {
        await buffer.append(row("a"));
        const first = await buffer.claim(100);
        expect(first.rows.map((r) => r.retried === true)).toEqual([false]);
        await buffer.done(new Map(), 1);
        // A failover to a replica that had the row but not its claim: it is queued again.
        await admin.send("RPUSH", [`${prefix}usage:queue`, JSON.stringify(row("a"))]);
        await admin.send("CLIENT", ["KILL", "SKIPME", "yes", "TYPE", "normal"]);
        await buffer.append(row("b")).catch(() => buffer.append(row("b")));
        // The rolled-back row, the row sent on the new connection, then the copy of the row the lost one acknowledged: all checked.
        const again = await buffer.claim(100);
        expect(again.rows.map((r) => [r.requestId, r.retried === true, r.copy === true])).toEqual([
          ["a", true, false],
          ["b", true, false],
          ["a", true, true],
        ]);
      } finally {
        admin.close();
        connection.close();
      }
    });
  });

  describe("the usage buffer on Redis and the settlement it follows", () => {
    test("a row written and announced at once after its call settled leaves nothing counted as unwritten", async () => {
      const { connection, state, buffer } = await bufferOnFreshPrefix();
      try {
        const credit = { kind: "credit", accountId: 7 } as const;
        expect(await state.counts.read(credit, Date.now())).toBe(1000);
        // The scripts loaded once, so the steps below take a moment each.
        await buffer.claim(100);
        await buffer.done(new Map(), 1);
        // The call settles (gathered for a few ms with others), its row goes to the buffer,
        // and a writer takes it, writes it and announces its charge straight away.
        void state.counts.adjust([{ counter: credit, release: 0, charge: 100 }]);
        await buffer.append(row("fast"));
        const { rows } = await buffer.claim(100);
        expect(rows.map((r) => r.requestId)).toEqual(["fast"]);
        await buffer.done(new Map([[7, 100]]), 1);
        // Whatever was gathered has run by now.
        await Bun.sleep(30);
        // The charge counted once: in the ledger (stored), no longer as unwritten.
        expect(await state.credit.held(7)).toBe(0);
        expect(await state.counts.read(credit, Date.now())).toBe(900);
      } finally {
        connection.close();
      }
    });

    test("clearing a claim no longer there (another process took it over meanwhile) takes no charge off", async () => {
      const { server, prefix, connection, state, buffer } = await bufferOnFreshPrefix();
      const admin = new RedisClient(server.url);
      try {
        const credit = { kind: "credit", accountId: 8 } as const;
        await state.counts.adjust([{ counter: credit, release: 0, charge: 100 }]);
        await Bun.sleep(30);
        await buffer.append(row("late"));
        expect((await buffer.claim(100)).rows).toHaveLength(1);
        // Taken over: the claim moved to another owner, who clears it and takes the charge off once.
        await admin.send("RENAME", [`${prefix}usage:claim:${state.owner}`, `${prefix}usage:claim:someone-else`]);
        await buffer.done(new Map([[8, 100]]), undefined);
        expect(await state.credit.held(8)).toBe(100);
      } finally {
        admin.close();
        connection.close();
      }
    });
  });
}
