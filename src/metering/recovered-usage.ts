import type { CountState } from "../state/state.ts";
import type { UsageRecorder } from "./usage-event.ts";

/**
 * Rows a previous run left in the usage spool (usage-spool.ts), taken up at start. Their
 * charges count as unwritten until written (their write announces them): else they would
 * be taken off other calls'. And they are written before the first call is admitted: day
 * and month totals (RPD, TPD, DailyLimit, HardLimit) are read from the rollups on first
 * use, and rows still waiting then were never counted in them, so a quota used up before
 * the restart let calls through again. A database refusing the write leaves them waiting,
 * as on any tick; a State that cannot note the charges is reported through `failed`.
 */
export async function takeUpRecoveredUsage(recorder: Pick<UsageRecorder, "recoveredCharges" | "flush">, counts: Pick<CountState, "adjust">, failed: (error: unknown) => void): Promise<void> {
  const recovered = recorder.recoveredCharges();
  if (recovered.size === 0) return;
  await counts.adjust([...recovered].map(([accountId, amount]) => ({ counter: { kind: "credit", accountId } as const, release: 0, charge: amount }))).catch(failed);
  await recorder.flush();
}
