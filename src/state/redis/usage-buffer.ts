import type { UsageBuffer } from "../../metering/usage-buffer.ts";
import type { NewUsageEventRow } from "../../store/store.ts";
import type { RedisConnection } from "./connection.ts";
import { USAGE_CLAIM, USAGE_RELEASE } from "./lua-usage.ts";
import type { RedisState } from "./state.ts";
import { DEFAULT_PREFIX } from "./state.ts";

/**
 * The usage buffer on Redis: `usage:queue` (a list of JSON rows, oldest first), one
 * `usage:claim:<owner>` list per process writing a batch, and the `usage:claims` set of
 * those owners. A claim outlives its writer: when the writer's lease (the State's) has
 * expired, the next claim by any process takes it over and writes it, after checking
 * which of its rows the database already holds.
 */
export function createRedisUsageBuffer(options: { connection: RedisConnection; state: RedisState; prefix?: string }): UsageBuffer {
  const { connection: redis, state } = options;
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  const keys = { queue: `${prefix}usage:queue`, claims: `${prefix}usage:claims`, claimPrefix: `${prefix}usage:claim:` };
  const run = (script: typeof USAGE_CLAIM, payload: unknown) => redis.run(script, [], [`${prefix}lease:`, state.owner, String(state.leaseMs), JSON.stringify(payload)]);

  return {
    async append(row) {
      await redis.send("RPUSH", [keys.queue, JSON.stringify(row)]);
    },
    async claim(max) {
      const [kind, waiting, ...texts] = (await run(USAGE_CLAIM, { ...keys, max })) as string[];
      const retried = kind === "retry";
      const rows = texts.map((text) => {
        // A row handed back by a stopping process carries an 'R' before its JSON.
        const flagged = text.startsWith("R");
        const row = JSON.parse(flagged ? text.slice(1) : text) as NewUsageEventRow & { retried?: boolean };
        if (retried || flagged) row.retried = true;
        return row;
      });
      return { rows, waiting: Number(waiting) };
    },
    done: (charged) => state.flushedClaim(charged, [keys.claimPrefix + state.owner, keys.claims]),
    async release() {
      await run(USAGE_RELEASE, keys);
    },
  };
}
