import type { RedisClient } from "bun";
import type { TestRouter } from "./router.ts";
import { waitFor } from "./router.ts";

/**
 * Usage rows waiting in Redis under a prefix (the router's default one unless told): the queue and every
 * process's claim, counted in one script. Counted command by command, a claim taken
 * between the reads (by any instance's own tick) was counted nowhere: 0 while its rows
 * were still being written. A claim is cleared only after its rows are committed, so 0
 * here means every row that reached Redis is in the database.
 */
export async function usageRowsInRedis(redis: RedisClient, prefix = "router:"): Promise<number> {
  return Number(
    await redis.send("EVAL", [
      // A claim's rows, without its id (`#…`, its first element).
      "local n = redis.call('LLEN', KEYS[1]) for _, claim in ipairs(redis.call('KEYS', ARGV[1])) do for _, row in ipairs(redis.call('LRANGE', claim, 0, -1)) do if string.sub(row, 1, 1) ~= '#' then n = n + 1 end end end return n",
      "1",
      `${prefix}usage:queue`,
      `${prefix}usage:claim:*`,
    ]),
  );
}

/**
 * The routers write what they settled until nothing waits in Redis: each flush drains
 * the queue, but another instance's own tick may claim rows meanwhile and still be
 * writing them when the flushes return.
 */
export function writeEverything(redis: () => RedisClient, ...routers: TestRouter[]): Promise<unknown> {
  return waitFor(
    async () => {
      for (const router of routers) await router.deps.usageRecorder.flush();
      return (await usageRowsInRedis(redis())) === 0;
    },
    10_000,
    "every usage row to be written",
  );
}
