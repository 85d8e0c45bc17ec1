import { and, eq } from "drizzle-orm";
import type { AccountRow } from "../store/schema/accounts.ts";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/log.ts";
import type { Store } from "../store/db.ts";
import { softLimitNotices } from "../store/schema/notices.ts";
import type { Mailer } from "./mailer.ts";

/** Delays between attempts when the mail server fails; then the next spend tries again. */
const RETRY_DELAYS_MS = [30_000, 120_000, 600_000];

/**
 * Mails an account once per business month when its spending crosses SoftLimit, to
 * its BillingEmail (else Email). Sending happens in the background: a slow or failing
 * mail server never delays a request. Failures are logged and retried; a month is
 * marked done only once a mail was accepted.
 */
export function createSoftLimitNotifier(deps: {
  store: Store;
  clock: Clock;
  log: Logger;
}) {
  const inFlight = new Set<string>();
  const sent = new Set<string>();

  const alreadySent = (accountId: number, month: string) => {
    const key = `${accountId}:${month}`;
    if (sent.has(key)) return true;
    const row = deps.store.db
      .select({ accountId: softLimitNotices.accountId })
      .from(softLimitNotices)
      .where(and(eq(softLimitNotices.accountId, accountId), eq(softLimitNotices.month, month)))
      .get();
    if (row) sent.add(key);
    return Boolean(row);
  };

  const attempt = async (mailer: Mailer, accountId: number, month: string, to: string, text: string, tries: number): Promise<void> => {
    const key = `${accountId}:${month}`;
    try {
      const result = await mailer.send({ to, subject: "Spending has reached your soft limit", text });
      deps.store.db.insert(softLimitNotices).values({ accountId, month, sentAt: deps.clock.now(), recipient: to }).onConflictDoNothing().run();
      sent.add(key);
      inFlight.delete(key);
      deps.log.info("soft-limit mail sent", { account: accountId, month, response: result.response });
    } catch (error) {
      deps.log.warn("soft-limit mail failed", { account: accountId, month, attempt: tries + 1, error: (error as Error).message });
      const delay = RETRY_DELAYS_MS[tries];
      if (delay === undefined) {
        inFlight.delete(key);
        return;
      }
      setTimeout(() => void attempt(mailer, accountId, month, to, text, tries + 1), delay).unref();
    }
  };

  return {
    /**
     * Called after a charge for each account whose subtree spent it (the account and its
     * ancestors: SoftLimit, like DailyLimit and HardLimit, bounds a whole subtree);
     * `subtreeSpent` reads the charges of a month. Cheap when nothing is due.
     */
    check(account: Readonly<AccountRow>, mailer: Mailer, subtreeSpent: (month: string) => number): void {
      if (account.softLimit === null) return;
      const accountId = account.id;
      const month = deps.clock.businessMonth();
      const key = `${accountId}:${month}`;
      if (inFlight.has(key) || !mailer.configured()) return;
      // Charged so far, without the reservations of calls still running.
      const spent = subtreeSpent(month) / 1e9;
      if (spent < account.softLimit || alreadySent(accountId, month)) return;
      inFlight.add(key);
      const to = account.billingEmail ?? account.email;
      const text =
        `Account ${account.name} (${account.email}) and the accounts under it have used ${spent.toFixed(4)} credits in ${month}, ` +
        `reaching its soft limit of ${account.softLimit}.` +
        (account.hardLimit !== null ? ` Calls stop at the hard limit of ${account.hardLimit}.` : "");
      void attempt(mailer, accountId, month, to, text, 0);
    },
  };
}

export type SoftLimitNotifier = ReturnType<typeof createSoftLimitNotifier>;
