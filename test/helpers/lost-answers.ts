import { expect } from "bun:test";
import { connectRedis } from "../../src/state/redis/connection.ts";
import { createRedisState, type RedisState } from "../../src/state/redis/state.ts";
import type { AdmitLine, CreditCounter, GaugeCounter, StateLoaders, WindowCounter } from "../../src/state/state.ts";
import type { RedisServer } from "./redis-server.ts";
import { freshPrefix } from "./redis-state.ts";
import { redisProxy } from "./redis-proxy.ts";

/** What the lost-answer tests (test/unit/redis-repairs*.test.ts) count: one account's call. */
export const T0 = Date.UTC(2026, 10, 28, 12);
export const funded: StateLoaders = { seed: () => 0, balance: () => ({ balance: 1_000_000, staleAt: Infinity, version: 1 }) };
export const credit: CreditCounter = { kind: "credit", accountId: 9 };
export const inFlight: GaugeCounter = { kind: "gauge", key: "acct:9:in-flight" };
export const rpm: WindowCounter = { kind: "window", key: "acct:9:rpm", windowMs: 60_000 };
/** A call: 100 of credit reserved, one call in flight, one request in the minute. */
export const call: AdmitLine[] = [
  { counter: credit, limit: 0, add: 100 },
  { counter: inFlight, limit: 10, add: 1 },
  { counter: rpm, limit: 1_000, add: 1 },
];

/**
 * An instance behind a proxy that makes the faults (commands time out after 300 ms),
 * one that watches Redis directly, and what the watcher sees of the account. A first
 * call is made and settled, so Redis holds the balance from then on (an admission that
 * must load it first counts nothing in its first run).
 */
export async function lostAnswersSetup(redis: RedisServer, states: RedisState[], options: { allowances?: boolean } = {}) {
  const proxy = await redisProxy(new URL(redis.url));
  const prefix = freshPrefix();
  const clock = () => T0;
  const connection = connectRedis(proxy.url, { commandTimeoutMs: 300 });
  const a = createRedisState({ connection, prefix, allowances: options.allowances ?? false }, funded, clock);
  const watcher = createRedisState({ connection: connectRedis(redis.url), prefix, allowances: false }, funded, clock);
  states.push(a, watcher);
  await a.counts.read(rpm, T0);
  expect((await a.counts.admit(call, T0)).admitted).toBe(true);
  await a.counts.adjust([{ counter: credit, release: 100, charge: 0 }, { counter: inFlight, delta: -1 }]);
  const seen = async () => ({ held: await watcher.credit.held(9), inFlight: await watcher.counts.read(inFlight, T0), rpm: await watcher.counts.read(rpm, T0) });
  return { proxy, a, watcher, seen, connection, prefix };
}
