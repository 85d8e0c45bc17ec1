import { script, type RedisConnection } from "./connection.ts";

/**
 * Whether Redis still holds what this process counted before its connection was made
 * again. A connection drops while Redis keeps every key (a network blip, the watchdog
 * replacing a stalled connection, a proxy restarting) or because Redis restarted empty.
 * The blocks allowances took over the old connection must go back in the first case
 * (else they stay counted: a window's until it slides out, a period total until the
 * period ends, a credit reservation for the life of the process) and must not in the
 * second (taking them off counts that no longer hold them would undercount).
 *
 * A marker under the process's owner id tells the two apart. The check sets it when it
 * is absent and renews it when present; nothing else writes it (the heartbeat runs the
 * check), so after a restart it is absent until this process looks. Each check says
 * which dataset the connection reaches: the same generation while the marker was found,
 * the next one when it was not (Redis restarted empty, was flushed, or the marker
 * expired in a partition longer than `MARKER_TTL_MS`: what was held then is dropped, as
 * the safe side). A Redis brought back from an older snapshot that holds the marker but
 * not a later block would have that block taken off: restoring a snapshot loses more
 * than that anyway.
 */
export interface DatasetWatch {
  /**
   * The generation of the dataset the connection reaches, when checked over the
   * connection in use and it is up; undefined otherwise (a check is then started).
   */
  generation(): number | undefined;
  /**
   * The generation as last checked, whether or not over the connection in use: an
   * operation sent now and one repaired later reach the same data when a check between
   * them finds this generation still (a restart drops the connection, and nothing but a
   * check sets the marker again).
   */
  latest(): number;
  /** Runs `then` when the dataset is still that of `generation`: at once when known, else after the next check; never when it changed. */
  ifStill(generation: number, then: () => void): void;
  /** Checks the connection in use (the heartbeat's run, and whatever must know now); rejects when Redis is away. */
  check(): Promise<void>;
  /** Settles when the check under way, if any, has (what waited on it ran). */
  settled(): Promise<void>;
  /** Removes the marker (a clean stop: nothing is held past it). */
  remove(): Promise<void>;
}

/** How long the marker outlives the process's last check (renewed by each heartbeat). */
export const MARKER_TTL_MS = 24 * 60 * 60_000;

/** 1 when the marker holds this process's token (renewed), else 0 (set now). */
const CHECK = script(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 0
`);

export function watchDataset(redis: RedisConnection, key: string): DatasetWatch {
  const token = crypto.randomUUID();
  let generation = 0;
  /** The connection (`connects()`) the generation was checked over; 0 before the first check. */
  let checkedOver = 0;
  let checking: Promise<void> | undefined;
  let waiting: { generation: number; then: () => void }[] = [];

  const known = (): boolean => checkedOver !== 0 && redis.up() && redis.connects() === checkedOver;

  const runWaiting = () => {
    const ready = waiting;
    waiting = [];
    for (const w of ready) if (w.generation === generation) w.then();
  };

  const checkOnce = async (): Promise<void> => {
    // A check speaks for the connection only when it went and came back over it: a
    // command sent while the connection was down opens a new one, so look again.
    for (;;) {
      const before = redis.connects();
      const found = (await redis.run(CHECK, [key], [token, String(MARKER_TTL_MS)])) === 1;
      if (!found) generation++;
      if (redis.connects() === before && before !== 0) {
        checkedOver = before;
        break;
      }
    }
    runWaiting();
  };

  const check = (): Promise<void> => {
    checking ??= checkOnce().finally(() => {
      checking = undefined;
    });
    return checking;
  };

  return {
    generation() {
      if (known()) return generation;
      check().catch(() => {});
      return undefined;
    },
    latest: () => generation,
    ifStill(of, then) {
      if (known()) {
        if (of === generation) then();
        return;
      }
      if (of !== generation) return;
      waiting.push({ generation: of, then });
      check().catch(() => {});
    },
    check,
    settled: () => (checking ?? Promise.resolve()).catch(() => {}),
    async remove() {
      await redis.send("DEL", [key]);
    },
  };
}
