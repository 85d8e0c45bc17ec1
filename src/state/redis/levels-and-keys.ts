import { BASE_COOLDOWN_MS, FAILURES_BEFORE_SLEEP, MAX_COOLDOWN_MS } from "../key-health.ts";
import type { KeyHealth, KeySleep, KeyState, LevelState, LevelStatus, SleepReason } from "../state.ts";
import type { Run } from "./counter-lines.ts";
import { KEY_HEALTH, LEVEL } from "./lua-keys.ts";
import { GATHER_MS, gatherWithin } from "./batching.ts";
import type { OpId, Repairs } from "./repairs.ts";

/** The Redis State's Levels (switch-over counts and state) and provider keys (health, sleep, calls in flight): one script run per operation. */


const orNull = (text: unknown): number | null => (text === "" || text === null || text === undefined ? null : Number(text));

export function createLevels(prefix: string, run: Run, repairs: Repairs): LevelState {
  const keyOf = (tenantId: number, level: number) => `${prefix}lv:${tenantId}:${level}`;
  const errorsOf = (tenantId: number, level: number) => `${prefix}le:${tenantId}:${level}`;
  const statusOf = (answer: unknown): LevelStatus => {
    const [switchedAt, lastErrorAt, probing] = answer as string[];
    return { switchedAt: orNull(switchedAt), lastErrorAt: orNull(lastErrorAt), probing: probing === "1" };
  };
  const call = (op: string, tenantId: number, level: number, rest: Record<string, unknown> = {}) =>
    run(LEVEL, { op, key: keyOf(tenantId, level), errors: errorsOf(tenantId, level), ...rest });
  /** Levels whose probe this process claimed and has not ended, by the claim's operation: an end Redis did not answer lets that claim go later (repairs.ts). */
  const claimed = new Map<string, OpId>();
  /** Runs an operation that ends this process's probe of the Level, if it holds one; unanswered, the claim is let go once Redis answers. */
  const ending = async <T>(tenantId: number, level: number, send: () => Promise<T>): Promise<T> => {
    const key = keyOf(tenantId, level);
    const claim = claimed.get(key);
    claimed.delete(key);
    try {
      return await send();
    } catch (error) {
      // Else the Level's probe stays this (living) process's, and no probe ever switches it back.
      // Only that claim goes: a later claim of this process is not this one's to end.
      if (claim)
        repairs.queue((op) => {
          repairs.guard(op);
          return call("letgo", tenantId, level, { o: claim.key, b: claim.bit });
        });
      throw error;
    }
  };
  return {
    async status(tenantId, level) {
      return statusOf(await call("status", tenantId, level));
    },
    async recordError(tenantId, level, now, threshold, windowMs) {
      return statusOf(await ending(tenantId, level, () => call("recordError", tenantId, level, { now, threshold, windowMs })));
    },
    async claimProbe(tenantId, level, quietSince) {
      return repairs.undoable(
        async (op) => {
          repairs.guard(op);
          const won = Number(await call("claimProbe", tenantId, level, { quietSince, o: op.key, b: op.bit })) === 1;
          if (won) claimed.set(keyOf(tenantId, level), op);
          return won;
        },
        (op) => {
          repairs.guard(op);
          return call("unclaim", tenantId, level, { o: op.key, b: op.bit });
        },
      );
    },
    async recover(tenantId, level, probe) {
      await ending(tenantId, level, () => call("recover", tenantId, level, { probe }));
    },
    async abandonProbe(tenantId, level) {
      await ending(tenantId, level, () => call("abandonProbe", tenantId, level));
    },
  };
}

/** A sleep as the scripts take it: JSON null would reach Lua as a true value, so absent fields stand for null. */
const sleepPayload = (sleep: KeySleep) => ({ sleeping: sleep.sleeping, reason: sleep.reason ?? undefined, until: sleep.until ?? undefined, count: sleep.count });

function sleepOf(fields: readonly string[]): KeySleep {
  const [sleeping, reason, until, count] = fields;
  return { sleeping: sleeping === "1", reason: reason ? (reason as SleepReason) : null, until: orNull(until), count: Number(count ?? 0) };
}

export function createKeys(prefix: string, run: Run, repairs: Repairs): KeyState {
  const keyOf = (tenantId: number, keyId: number) => `${prefix}k:${tenantId}:${keyId}`;
  const rules = [String(FAILURES_BEFORE_SLEEP), String(BASE_COOLDOWN_MS), String(MAX_COOLDOWN_MS)];
  const call = (payload: Record<string, unknown>) => run(KEY_HEALTH, payload, ...rules);
  /**
   * Calls beginning and ending on keys within a few ms go in one run, counted per key: a
   * take and a release per call were two scripts per call. A key's count of calls in
   * flight thus rises and drops up to that much later; this process's own choices count
   * their recent calls themselves (routing/key-pool.ts), and a probe's claim still goes
   * at once (only one caller may win it). A call's release joins the run of its take or
   * a later one, and runs go in order on the connection, so no count dips below zero.
   */
  type Flight = { stored?: ReturnType<typeof sleepPayload>; t: number; r: number };
  const flightSoon = gatherWithin<{ key: string; stored?: ReturnType<typeof sleepPayload>; began: boolean }, Map<string, Flight>>(
    GATHER_MS,
    () => new Map(),
    ({ key, stored, began }, into) => {
      let flight = into.get(key);
      if (!flight) into.set(key, (flight = { t: 0, r: 0 }));
      if (began) {
        flight.t++;
        flight.stored = stored;
      } else flight.r++;
    },
    async (flights) => {
      const keys = [...flights].map(([key, { stored, t, r }]) => ({ key, stored, t, r }));
      // Sent again under its id until it counted, after any that waits: else the calls it
      // ended stay in flight for as long as this process lives (repairs.ts).
      await repairs.resent((op) => {
        repairs.guard(op);
        return call({ op: "flight", keys, o: op.key, b: op.bit });
      });
    },
  );
  /**
   * Successes within a few ms go in one run, once per key (a success on a key that is
   * awake and without failures changes nothing, and one success says all the others
   * would): a verdict per call was a script per call. Each caller reads its key's new
   * sleep, if any, from the run's answer.
   */
  type Success = { key: string; stored: ReturnType<typeof sleepPayload>; noSleep: boolean };
  const successSoon = gatherWithin<Success, Map<string, Success>, Map<string, string[]>>(
    GATHER_MS,
    () => new Map(),
    (success, into) => void into.set(success.key, success),
    async (successes) => {
      const keys = [...successes.values()];
      const answer = (await call({ op: "successes", keys })) as string[][];
      return new Map(keys.map((success, i) => [success.key, answer[i] ?? []]));
    },
  );
  return {
    async health(tenantId, keys) {
      if (keys.length === 0) return [];
      const answer = (await call({ op: "health", keys: keys.map((k) => ({ key: keyOf(tenantId, k.id), stored: sleepPayload(k.stored) })) })) as string[][];
      return answer.map((fields): KeyHealth => ({ ...sleepOf(fields), inFlight: Number(fields[4]), failures: Number(fields[5]), probing: fields[6] === "1" }));
    },
    async take(tenantId, key, probe) {
      if (!probe) {
        await flightSoon({ key: keyOf(tenantId, key.id), stored: sleepPayload(key.stored), began: true });
        return true;
      }
      const redisKey = keyOf(tenantId, key.id);
      return repairs.undoable(
        async (op) => {
          repairs.guard(op);
          return Number(await call({ op: "take", key: redisKey, stored: sleepPayload(key.stored), probe, o: op.key, b: op.bit })) === 1;
        },
        // A claim that ran unanswered would hold the key's probe for as long as this process lives: taken back.
        (op) => {
          repairs.guard(op);
          return call({ op: "untake", key: redisKey, o: op.key, b: op.bit });
        },
      );
    },
    release: (tenantId, keyId) => flightSoon({ key: keyOf(tenantId, keyId), began: false }),
    async record(tenantId, key, verdict, now) {
      const redisKey = keyOf(tenantId, key.id);
      if (verdict.kind === "success") {
        const changed = (await successSoon({ key: redisKey, stored: sleepPayload(key.stored), noSleep: key.noSleep })).get(redisKey);
        return changed && changed.length > 0 ? sleepOf(changed) : undefined;
      }
      // A failure follows the successes before it, or an older success could undo it.
      await successSoon.flush();
      const answer = await call({ op: "record", key: redisKey, stored: sleepPayload(key.stored), noSleep: key.noSleep, verdict, now });
      return answer ? sleepOf(answer as string[]) : undefined;
    },
    async setSleep(tenantId, key, sleep) {
      await call({ op: "setSleep", key: keyOf(tenantId, key.id), stored: sleepPayload(key.stored), sleep: sleepPayload(sleep) });
    },
  };
}
