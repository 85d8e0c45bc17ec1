import type { Logger } from "../../core/log.ts";
import { causeMessage } from "../../core/errors.ts";
import type { RedisConnection } from "./connection.ts";
import { RESEND_WINDOW_MS } from "./usage-buffer.ts";

/**
 * How a Redis server keeps what it is given, as it says itself. Settled usage rows wait
 * in Redis for PostgreSQL, so what Redis can lose is charges: the router says so at start
 * rather than after a restart.
 */
export interface RedisDurability {
  /** `maxmemory` (bytes; 0: no limit, Redis never evicts). */
  maxMemory?: number;
  evictionPolicy?: string;
  /** Writes logged to disk (AOF). */
  appendOnly?: boolean;
  /** RDB save points configured; undefined when `CONFIG GET` is refused (managed services often refuse it). */
  snapshots?: boolean;
}

/** The `name:value` lines of an INFO section. */
function infoFields(reply: unknown): Map<string, string> {
  const fields = new Map<string, string>();
  if (typeof reply !== "string") return fields;
  for (const line of reply.split(/\r?\n/)) {
    const colon = line.indexOf(":");
    if (colon > 0 && !line.startsWith("#")) fields.set(line.slice(0, colon), line.slice(colon + 1).trim());
  }
  return fields;
}

/** Reads what the server says of its memory limit, eviction and persistence. */
export async function readDurability(redis: Pick<RedisConnection, "send">): Promise<RedisDurability> {
  const memory = infoFields(await redis.send("INFO", ["memory"]));
  const persistence = infoFields(await redis.send("INFO", ["persistence"]));
  let snapshots: boolean | undefined;
  try {
    const reply = (await redis.send("CONFIG", ["GET", "save"])) as unknown;
    // RESP3 answers a map, RESP2 a flat list.
    const value = Array.isArray(reply) ? reply[1] : (reply as Record<string, unknown> | null)?.save;
    if (typeof value === "string") snapshots = value.trim() !== "";
  } catch {
    // CONFIG is refused on many managed services: their persistence is theirs to say.
  }
  const maxMemory = memory.has("maxmemory") ? Number(memory.get("maxmemory")) : undefined;
  const aof = persistence.get("aof_enabled");
  return { maxMemory, evictionPolicy: memory.get("maxmemory_policy"), appendOnly: aof === undefined ? undefined : aof === "1", snapshots };
}

/** What an operator should change, in words: nothing when Redis keeps what it is given. */
export function durabilityWarnings(durability: RedisDurability): string[] {
  const warnings: string[] = [];
  const policy = durability.evictionPolicy;
  if (policy !== undefined && policy !== "noeviction" && durability.maxMemory !== 0) {
    const what = policy.startsWith("allkeys")
      ? "usage rows waiting for PostgreSQL (charges), credit reservations and limits"
      : "rate windows and what calls in flight hold";
    warnings.push(`Redis may evict keys when its memory is full (maxmemory-policy ${policy}): ${what} could be dropped; set maxmemory-policy noeviction`);
  }
  if (durability.appendOnly === false) {
    const since = durability.snapshots === false ? "everything it holds (no save points either)" : "what was written since its last snapshot";
    warnings.push(
      `Redis does not log writes to disk (appendonly no): a restart loses ${since}, including usage rows waiting for PostgreSQL beyond the last ${RESEND_WINDOW_MS / 1000} s each instance sends again; set appendonly yes (or rely on a replica that fails over)`,
    );
  }
  return warnings;
}

/** Between two reads of the settings while Redis does not answer. */
const DURABILITY_RETRY_MS = 5000;

/**
 * Logs what Redis's settings risk (durabilityWarnings) once they are read: read again
 * every few seconds while Redis does not answer, so an instance started before Redis
 * warns once it does (read once at start, it never did). Returns what stops the reads.
 */
export function warnOfDurability(redis: Pick<RedisConnection, "send">, log: Logger): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  const attempt = () =>
    void readDurability(redis).then(
      (durability) => {
        for (const warning of durabilityWarnings(durability)) log.warn(warning);
      },
      (error: unknown) => {
        log.debug("Redis's persistence settings could not be read; read again shortly", { error: causeMessage(error) });
        if (stopped) return;
        timer = setTimeout(attempt, DURABILITY_RETRY_MS);
        timer.unref?.();
      },
    );
  attempt();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
