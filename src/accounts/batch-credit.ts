import { badRequest, HttpError } from "../core/errors.ts";
import { BatchCreditBody, type BatchEntryResult, type BatchResult } from "../wire/accounts.ts";
import { bodyCheck } from "../wire/check.ts";
import type { Held, Tx } from "./ledger.ts";
import { NANOS_PER_CREDIT, nanosToCredits } from "./records.ts";
import type { AccountsService, Actor } from "./service.ts";

/** Why an entry whose account does not exist for the caller (unknown, outside its subtree, or no ID at all) is skipped. */
const UNKNOWN = "unknown account or not manageable by you";

/** Thrown at the end of a dry run to roll its transaction back. */
class DryRunRollback extends Error {}

/** Types, ranges and unknown fields are the model's (src/wire/accounts.ts); the non-zero rule is the domain's. */
const checkBody = bodyCheck(BatchCreditBody, {
  rules: {
    // Zero, or less than one nano-credit, would change nothing yet be logged as a change.
    CreditGranted: (credit) => {
      if (Math.round(credit * NANOS_PER_CREDIT) === 0) throw badRequest("CreditGranted must be a non-zero number", "CreditGranted");
    },
  },
});

function readBody(raw: Record<string, unknown>) {
  const body = checkBody(raw);
  return { ids: [...new Set(body.IDs)], credit: body.CreditGranted, days: body.Days ?? undefined, dryRun: body.DryRun ?? false };
}

/**
 * `POST /x-users/batch-credit`: each entry is applied in its own transaction (atomic
 * per entry) or skipped with a reason, never failing the whole request. A dry run
 * runs the very same steps inside one transaction that is then rolled back, so it
 * reports exactly what a real run would.
 */
export async function runBatchCredit(service: AccountsService, actor: Actor, body: Record<string, unknown>): Promise<BatchResult> {
  const { ids, credit, days, dryRun } = readBody(body);
  const results: BatchEntryResult[] = [];
  let callerChange = 0;
  let childrenChange = 0;
  type Runner = <T>(fn: (tx: Tx) => Promise<T>) => Promise<T>;
  // What the calls of the account each entry takes from hold (the caller's for a grant,
  // the entry's own for a deduction), asked outside the entries' transactions.
  // IDs below 1 name no account: skipped as unknown, never looked up.
  const names = (id: number) => id >= 1;
  const eligible = ids.filter((id) => id !== actor.account.id && names(id));
  // A grant's source is the caller for every entry: read once, the ledger seen beside it
  // following the batch's own moves (they are not charges written meanwhile: see `stillHeld`).
  let callerHeld = credit > 0 ? await service.heldForBatch(actor.account, 0, credit, eligible.length) : undefined;
  const heldFor = (id: number): Promise<Held | undefined> => (credit > 0 ? Promise.resolve(callerHeld) : service.heldForBatch(actor.account, id, credit, 1).catch(() => undefined));
  const heldBefore = dryRun ? new Map(await Promise.all(eligible.map(async (id) => [id, await heldFor(id)] as const))) : undefined;
  const one = async (id: number, run: Runner) => {
    if (id === actor.account.id) {
      results.push({ ID: id, status: "skipped", reason: "cannot change your own credit" });
      return;
    }
    if (!names(id)) {
      results.push({ ID: id, status: "skipped", reason: UNKNOWN });
      return;
    }
    try {
      // A dry run read every entry's before its transaction (none may be read inside it:
      // the store would wait for the transaction that waits for it).
      const held = heldBefore ? heldBefore.get(id) : await heldFor(id);
      const applied = await run((tx) => service.creditOne(tx, actor.account, String(id), credit, days, held));
      if (!dryRun) service.creditChanged(actor.account.id, applied.target.id);
      if (callerHeld) callerHeld = { ...callerHeld, ledger: callerHeld.ledger + applied.outcome.callerChange };
      callerChange += applied.outcome.callerChange;
      childrenChange += applied.outcome.targetChange;
      results.push({ ID: id, status: "applied", BalanceBefore: nanosToCredits(applied.before), BalanceAfter: nanosToCredits(applied.after) });
    } catch (error) {
      // A caller whose key stopped working meanwhile gets its 401, not a list of skips.
      if (!(error instanceof HttpError) || error.kind === "authentication") throw error;
      const reason = error.kind === "not_found" ? UNKNOWN : error.code === "insufficient_credit" ? "insufficient credit" : error.message;
      results.push({ ID: id, status: "skipped", reason });
    }
  };
  if (dryRun) {
    try {
      await service.transaction(async (outer) => {
        // Savepoints inside the outer transaction keep a skipped entry from leaving half its change.
        const nested: Runner = (fn) => outer.savepoint(() => fn(outer));
        for (const id of ids) await one(id, nested);
        throw new DryRunRollback();
      });
    } catch (error) {
      if (!(error instanceof DryRunRollback)) throw error;
    }
  } else {
    // Each entry commits on its own: whatever stops the batch midway, the entries applied
    // before it keep their log rows (one per changed account, naming every target).
    try {
      for (let i = 0; i < ids.length; i++) {
        try {
          await one(ids[i]!, service.transaction);
        } catch (error) {
          // The caller's key stopped working midway (rotated, deleted, on another instance):
          // what was applied stays applied and is said so; the rest is not made.
          const applied = results.some((r) => r.status === "applied");
          if (!(error instanceof HttpError) || error.kind !== "authentication" || !applied) throw error;
          for (const id of ids.slice(i)) results.push({ ID: id, status: "skipped", reason: "not applied: your API key stopped working during the batch" });
          break;
        }
      }
    } finally {
      for (const r of results) {
        if (r.status !== "applied") continue;
        await service.log.write({
          actorId: actor.account.id,
          action: "account.batch_credit",
          targetId: r.ID,
          details: { credit, days, balanceBefore: r.BalanceBefore, balanceAfter: r.BalanceAfter },
          ip: actor.ip,
        });
      }
    }
  }
  return {
    object: "batch_credit",
    DryRun: dryRun,
    results,
    summary: {
      applied: results.filter((r) => r.status === "applied").length,
      skipped: results.filter((r) => r.status === "skipped").length,
      ParentCreditChange: nanosToCredits(callerChange),
      ChildrenCreditChange: nanosToCredits(childrenChange),
    },
  };
}
