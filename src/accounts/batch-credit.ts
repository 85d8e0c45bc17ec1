import { badRequest, HttpError } from "../core/errors.ts";
import { onlyFields } from "../http/body.ts";
import type { Tx } from "./ledger.ts";
import { NANOS_PER_CREDIT, nanosToCredits } from "./records.ts";
import type { AccountsService, Actor } from "./service.ts";

/** Thrown at the end of a dry run to roll its transaction back. */
class DryRunRollback extends Error {}

export interface BatchEntryResult {
  ID: number;
  status: "applied" | "skipped";
  reason?: string;
  BalanceBefore?: number;
  BalanceAfter?: number;
}

function readBody(body: Record<string, unknown>) {
  onlyFields(body, ["IDs", "CreditGranted", "Days", "DryRun"]);
  const ids = body.IDs;
  if (!Array.isArray(ids) || ids.length === 0 || ids.length > 1000) throw badRequest("IDs must be an array of 1 to 1000 account IDs", "IDs");
  for (const id of ids) if (!Number.isSafeInteger(id) || (id as number) < 1) throw badRequest(`IDs: ${JSON.stringify(id)} is not an account ID`, "IDs");
  const credit = body.CreditGranted;
  if (typeof credit !== "number" || !Number.isFinite(credit) || Math.round(credit * NANOS_PER_CREDIT) === 0) {
    throw badRequest("CreditGranted must be a non-zero number", "CreditGranted");
  }
  if (Math.abs(credit) > 1e6) throw badRequest("CreditGranted must be at most 1,000,000 credits per change", "CreditGranted");
  const days = body.Days;
  if (days !== undefined && days !== null && (!Number.isSafeInteger(days) || (days as number) < 1)) {
    throw badRequest("Days must be a positive integer", "Days");
  }
  const dryRun = body.DryRun ?? false;
  if (typeof dryRun !== "boolean") throw badRequest("DryRun must be a boolean", "DryRun");
  return { ids: [...new Set(ids as number[])], credit, days: (days ?? undefined) as number | undefined, dryRun };
}

/**
 * `POST /x-users/batch-credit`: each entry is applied in its own transaction (atomic
 * per entry) or skipped with a reason, never failing the whole request. A dry run
 * runs the very same steps inside one transaction that is then rolled back, so it
 * reports exactly what a real run would.
 */
export async function runBatchCredit(service: AccountsService, actor: Actor, body: Record<string, unknown>) {
  const { ids, credit, days, dryRun } = readBody(body);
  const results: BatchEntryResult[] = [];
  let callerChange = 0;
  let childrenChange = 0;
  type Runner = <T>(fn: (tx: Tx) => Promise<T>) => Promise<T>;
  const one = async (id: number, run: Runner) => {
    if (id === actor.account.id) {
      results.push({ ID: id, status: "skipped", reason: "cannot change your own credit" });
      return;
    }
    try {
      const applied = await run((tx) => service.creditOne(tx, actor.account, String(id), credit, days));
      if (!dryRun) service.creditChanged(actor.account.id, applied.target.id);
      callerChange += applied.outcome.callerChange;
      childrenChange += applied.outcome.targetChange;
      results.push({ ID: id, status: "applied", BalanceBefore: nanosToCredits(applied.before), BalanceAfter: nanosToCredits(applied.after) });
    } catch (error) {
      // A caller whose key stopped working meanwhile gets its 401, not a list of skips.
      if (!(error instanceof HttpError) || error.kind === "authentication") throw error;
      const reason = error.kind === "not_found" ? "unknown account or not manageable by you" : error.code === "insufficient_credit" ? "insufficient credit" : error.message;
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
    for (const id of ids) await one(id, service.transaction);
  }
  if (!dryRun) {
    // One row per changed account, so the log names every target of the batch.
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
