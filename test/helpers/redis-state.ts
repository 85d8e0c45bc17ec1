import type { StateLoaders } from "../../src/state/state.ts";
import { connectRedis } from "../../src/state/redis/connection.ts";
import { createRedisState, type RedisState } from "../../src/state/redis/state.ts";
import { startRedisServer, type RedisServer } from "./redis-server.ts";

/**
 * A throwaway redis-server for one test file, started on first use; every State made
 * from it gets a prefix of its own unless told one, so each test starts from an empty
 * Redis. The file stops it with `afterAll(redis.close)`.
 */
export interface RedisStates {
  server(): Promise<RedisServer>;
  /** A State on the server; States made with the same prefix share their counters. */
  state(loaders: StateLoaders, now: () => number, options?: { prefix?: string; leaseMs?: number }): Promise<RedisState>;
  close(): Promise<void>;
}

let prefixes = 0;
/** A prefix no other State in this run uses. */
export function freshPrefix(): string {
  return `test${++prefixes}:${crypto.randomUUID().slice(0, 8)}:`;
}

export function redisStates(): RedisStates {
  let server: Promise<RedisServer> | undefined;
  const states: RedisState[] = [];
  const started = () => (server ??= startRedisServer());
  return {
    server: started,
    async state(loaders, now, options = {}) {
      const { url } = await started();
      const state = createRedisState({ connection: connectRedis(url), prefix: options.prefix ?? freshPrefix(), leaseMs: options.leaseMs }, loaders, now);
      states.push(state);
      return state;
    },
    async close() {
      await Promise.all(states.splice(0).map((state) => state.close()));
      const running = server;
      server = undefined;
      if (running) await (await running).close();
    },
  };
}
