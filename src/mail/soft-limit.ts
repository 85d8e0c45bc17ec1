import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/log.ts";
import type { ClaimState } from "../state/state.ts";
import type { AccountRow, Store } from "../store/store.ts";
import type { Mailer } from "./mailer.ts";

/** Delays between attempts when the mail server fails; then the next spend tries again. */
const RETRY_DELAYS_MS = [30_000, 120_000, 600_000];
/** A month's claim outlives the month: once mailed (or being mailed), nobody else tries. */
const MONTH_CLAIM_MS = 32 * 24 * 3_600_000;
/** An account's spending is read at most this often; a spend meanwhile is checked when it ends. */
export const SOFT_LIMIT_CHECK_MS = 1000;
/** Once the month's mail is sent or claimed elsewhere, its spending is not read again for this long. */
const DONE_CHECK_MS = 10 * 60_000;

/**
 * Mails an account once per business month when its spending crosses SoftLimit, to
 * its BillingEmail (else Email). Sending happens in the background: a slow or failing
 * mail server never delays a request. Failures are logged and retried; a month is
 * marked done only once a mail was accepted. Whoever crosses first claims the month in
 * the State (`soft-limit:<account>:<month>`), so instances sharing it send one mail; the
 * claim is given back when every attempt failed, so a later spend tries again.
 */
export function createSoftLimitNotifier(deps: {
  store: Store;
  clock: Clock;
  log: Logger;
  claims: ClaimState;
  /** How often an account's spending is read at most (default SOFT_LIMIT_CHECK_MS). */
  checkMs?: number;
}) {
  const claimKey = (accountId: number, month: string) => `soft-limit:${accountId}:${month}`;
  const checkMs = deps.checkMs ?? SOFT_LIMIT_CHECK_MS;
  /**
   * Per account, until when (real time: the business clock may stand still in tests) its
   * spending is not read again, and the check a spend meanwhile left for then. Every
   * charge calls `check` for each account of its chain: reading the State (a Redis script
   * when shared) on each was the notifier's whole cost.
   */
  interface Quiet {
    month: string;
    until: number;
    done: boolean;
    /** The check a spend during the quiet time left for its end: the newest arguments it was called with. */
    later?: Parameters<typeof check>;
    timer?: ReturnType<typeof setTimeout>;
  }
  const quiet = new Map<number, Quiet>();
  const checkLater = (entry: Quiet) => {
    entry.timer = undefined;
    const args = entry.later;
    entry.later = undefined;
    if (args) void check(...args).catch((error: unknown) => deps.log.error("the soft-limit check failed", { account: args[0].id, error: (error as Error).message }));
  };

  const attempt = async (mailer: Mailer, accountId: number, month: string, to: string, text: string, tries: number): Promise<void> => {
    try {
      const result = await mailer.send({ to, subject: "Spending has reached your soft limit", text });
      await deps.store.softLimitMail.markSent(accountId, month, deps.clock.now(), to);
      deps.log.info("soft-limit mail sent", { account: accountId, month, response: result.response });
    } catch (error) {
      deps.log.warn("soft-limit mail failed", { account: accountId, month, attempt: tries + 1, error: (error as Error).message });
      const delay = RETRY_DELAYS_MS[tries];
      if (delay === undefined) {
        await deps.claims.release(claimKey(accountId, month));
        return;
      }
      setTimeout(() => void attempt(mailer, accountId, month, to, text, tries + 1), delay).unref();
    }
  };

  /**
   * Called after a charge for each account whose subtree spent it (the account and its
   * ancestors: SoftLimit, like DailyLimit and HardLimit, bounds a whole subtree);
   * `subtreeSpent` reads the charges of a month, at most once per `checkMs` per account
   * (a mail goes at most that long after the spend that crossed), and not at all for ten
   * minutes once the month's mail is sent or being sent.
   */
  const check = async (account: Readonly<AccountRow>, mailer: Mailer, subtreeSpent: (month: string) => Promise<number>): Promise<void> => {
    if (account.softLimit === null || !mailer.configured()) return;
    const accountId = account.id;
    const month = deps.clock.businessMonth();
    const now = performance.now();
    const last = quiet.get(accountId);
    if (last && last.month === month && now < last.until) {
      // Read again once the quiet time ends: the last spend of a burst may be the one that crossed.
      if (!last.done) {
        last.later = [account, mailer, subtreeSpent];
        if (!last.timer) {
          last.timer = setTimeout(checkLater, last.until - now, last);
          last.timer.unref?.();
        }
      }
      return;
    }
    if (last?.timer) clearTimeout(last.timer);
    const entry: Quiet = { month, until: now + checkMs, done: false };
    quiet.set(accountId, entry);
    const done = () => {
      entry.done = true;
      entry.until = performance.now() + DONE_CHECK_MS;
    };
    // Charged so far, without the reservations of calls still running.
    const spent = (await subtreeSpent(month)) / 1e9;
    if (spent < account.softLimit) return;
    // The claim is kept once the month is done: later spends stop here.
    if (!(await deps.claims.claim(claimKey(accountId, month), MONTH_CLAIM_MS, deps.clock.now()))) return done();
    done();
    if (await deps.store.softLimitMail.wasSent(accountId, month)) return;
    const to = account.billingEmail ?? account.email;
    const text =
      `Account ${account.name} (${account.email}) and the accounts under it have used ${spent.toFixed(4)} credits in ${month}, ` +
      `reaching its soft limit of ${account.softLimit}.` +
      (account.hardLimit !== null ? ` Calls stop at the hard limit of ${account.hardLimit}.` : "");
    void attempt(mailer, accountId, month, to, text, 0);
  };

  return { check };
}

export type SoftLimitNotifier = ReturnType<typeof createSoftLimitNotifier>;
