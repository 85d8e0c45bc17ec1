import { afterAll } from "bun:test";
import type { StateLoaders } from "../../src/state/memory.ts";
import { connectRedis } from "../../src/state/redis/connection.ts";
import { createRedisState, type RedisState } from "../../src/state/redis/state.ts";
import { startRedisServer, type RedisServer } from "./redis-server.ts";

/**
 * One throwaway redis-server per test file, started on first use and stopped after the
 * file's tests; every State made here gets a prefix of its own, so each test starts
 * from an empty Redis.
 */
let server: Promise<RedisServer> | undefined;
const states: RedisState[] = [];
let prefixes = 0;

afterAll(async () => {
  for (const state of states.splice(0)) state.close();
  const started = server;
  server = undefined;
  if (started) await (await started).close();
});

export function sharedRedisServer(): Promise<RedisServer> {
  server ??= startRedisServer();
  return server;
}

/** A fresh prefix: the States made with it share their counters, and no one else's. */
export function freshPrefix(): string {
  return `test${++prefixes}:${crypto.randomUUID().slice(0, 8)}:`;
}

export async function redisState(loaders: StateLoaders, now: () => number, options: { prefix?: string; leaseMs?: number } = {}): Promise<RedisState> {
  const { url } = await sharedRedisServer();
  const state = createRedisState({ connection: connectRedis(url), prefix: options.prefix ?? freshPrefix(), leaseMs: options.leaseMs }, loaders, now);
  states.push(state);
  return state;
}
