import type { CreditState } from "../state.ts";
import type { MergedChange } from "./batching.ts";
import type { RedisConnection } from "./connection.ts";
import type { Run } from "./counter-lines.ts";
import { CREDIT } from "./lua-credit.ts";

/**
 * The Redis State's credit outside admission (state.ts): a balance dropped when the
 * ledger changed, charges written to the ledger (`flushed`), what calls hold, and the
 * credit of a deleted account, whose hash goes once nothing holds it any more.
 */
export function createCreditState(deps: {
  prefix: string;
  run: Run;
  redis: Pick<RedisConnection, "send">;
  now: () => number;
  /** The gathered settlements: what was gathered counts before a read, and goes before a retirement. */
  settlements: { applied(): Promise<void> | undefined; flush(): Promise<void> };
  /** Counts whose answer was lost, made good before a read, and before charges are written off (repairs.ts). */
  repairs: { run(): Promise<void>; drained(): Promise<void> };
  /** Ends the allowances holding blocks of the account's credit. */
  endBlocks: (accountId: number) => void;
  /** What this process's allowances hold of the account's credit and did not use. */
  unused: (accountId: number) => Promise<number>;
}) {
  const { run, redis, now } = deps;
  /** Deleted accounts whose calls still hold credit, and what to do when they no longer do (this process's callbacks). */
  const retired = new Map<number, { settled: () => void; timer: ReturnType<typeof setInterval> }>();
  const creditKey = (accountId: number) => `${deps.prefix}c:${accountId}`;
  const held = async (accountId: number) => Number(await run(CREDIT, { op: "held", key: creditKey(accountId) }));
  const settleRetired = async (accountId: number) => {
    const entry = retired.get(accountId);
    if (!entry || (await held(accountId)) > 0 || !retired.has(accountId)) return;
    retired.delete(accountId);
    clearInterval(entry.timer);
    await redis.send("DEL", [creditKey(accountId)]);
    entry.settled();
  };

  const flushed = async (charged: ReadonlyMap<number, number>, version: number | undefined, drop?: [string, string]) => {
    if (charged.size === 0 && !drop) return;
    // A settlement of this process still waiting to count its charge as unwritten goes
    // first: written off before it, the charge would count as unwritten for good.
    await deps.repairs.drained();
    await run(CREDIT, { op: "flushed", charges: [...charged].map(([accountId, amount]) => [creditKey(accountId), amount]), v: version, now: now(), drop });
    if (retired.size > 0) for (const accountId of charged.keys()) await settleRetired(accountId);
  };

  const credit: CreditState = {
    async invalidate(accountId) {
      // A block reserved against the old balance admits nothing more.
      deps.endBlocks(accountId);
      // The next use, by any process, reads the ledger again; what calls hold stays.
      await redis.send("HDEL", [creditKey(accountId), "stored", "staleAt", "version", "exp"]);
    },
    flushed: (charged, version) => flushed(charged, version),
    async held(accountId) {
      // As a read: the give-backs gathered so far count first.
      await deps.settlements.applied();
      await deps.repairs.run();
      const all = await held(accountId);
      return Math.max(0, all - (await deps.unused(accountId)));
    },
    async retire(accountId, settled) {
      deps.endBlocks(accountId);
      await deps.settlements.flush();
      // Calls on other instances settle there, and a killed one's leases only expire:
      // look again every second until nothing is held.
      const timer = setInterval(() => void settleRetired(accountId).catch(() => {}), 1000);
      timer.unref?.();
      const previous = retired.get(accountId);
      if (previous) clearInterval(previous.timer);
      retired.set(accountId, { settled, timer });
      await settleRetired(accountId);
    },
  };

  return {
    credit,
    flushed,
    /** After a settlement run: a deleted account whose credit it released may be done with. */
    async settled(merged: readonly MergedChange[]) {
      if (retired.size > 0) for (const { counter } of merged) if (counter.kind === "credit") await settleRetired(counter.accountId);
    },
    stop() {
      for (const entry of retired.values()) clearInterval(entry.timer);
    },
  };
}
