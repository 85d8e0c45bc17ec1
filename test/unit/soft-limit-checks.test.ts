import { describe, expect, test } from "bun:test";
import { createSoftLimitNotifier } from "../../src/mail/soft-limit.ts";
import type { Mailer } from "../../src/mail/mailer.ts";
import type { AccountRow, Store } from "../../src/store/store.ts";
import type { ClaimState } from "../../src/state/state.ts";
import type { Clock } from "../../src/core/clock.ts";
import { createLogger } from "../../src/core/log.ts";

const CHECK_MS = 60;

/** The notifier over fakes: the spending it reads, the mails it sends, the claims it takes. */
function notifier() {
  let spentNanos = 0;
  const reads: string[] = [];
  const mails: string[] = [];
  const claimed = new Set<string>();
  const sent = new Set<string>();
  const store = { softLimitMail: { wasSent: async (id: number, month: string) => sent.has(`${id}:${month}`), markSent: async (id: number, month: string) => void sent.add(`${id}:${month}`) } } as unknown as Store;
  const claims: ClaimState = {
    claim: async (key) => (claimed.has(key) ? false : (claimed.add(key), true)),
    release: async (key) => void claimed.delete(key),
  };
  const clock = { businessMonth: () => "2026-11", now: () => Date.now() } as unknown as Clock;
  const mailer: Mailer = { configured: () => true, send: async (mail) => (mails.push(mail.to), { response: "250 ok" }) as never };
  const soft = createSoftLimitNotifier({ store, clock, log: createLogger("error", () => {}), claims, checkMs: CHECK_MS });
  const account = { id: 7, name: "team", email: "team@example.com", billingEmail: null, softLimit: 1, hardLimit: null } as unknown as AccountRow;
  const spend = (credits: number) => {
    spentNanos += credits * 1e9;
    return soft.check(account, mailer, async (month) => (reads.push(month), spentNanos));
  };
  return { spend, reads, mails };
}

describe("soft-limit checks after each charge", () => {
  test("a burst of charges reads the spending once, and once more when the quiet time ends; the crossing in it mails once", async () => {
    const { spend, reads, mails } = notifier();
    await spend(0.1);
    for (let i = 0; i < 20; i++) await spend(0.05);
    // 1.1 credits spent: the crossing came inside the quiet time, so nothing is read or sent yet.
    expect(reads).toHaveLength(1);
    expect(mails).toHaveLength(0);
    await Bun.sleep(CHECK_MS * 3);
    expect(reads).toHaveLength(2);
    expect(mails).toEqual(["team@example.com"]);
  });

  test("once the month's mail is sent, later charges read nothing", async () => {
    const { spend, reads, mails } = notifier();
    await spend(2);
    expect(mails).toEqual(["team@example.com"]);
    const before = reads.length;
    await Bun.sleep(CHECK_MS * 2);
    for (let i = 0; i < 10; i++) await spend(0.1);
    await Bun.sleep(CHECK_MS * 2);
    expect(reads).toHaveLength(before);
    expect(mails).toHaveLength(1);
  });

  test("below the limit, charges a quiet time apart are each read", async () => {
    const { spend, reads, mails } = notifier();
    await spend(0.1);
    await Bun.sleep(CHECK_MS + 10);
    await spend(0.1);
    expect(reads).toHaveLength(2);
    expect(mails).toHaveLength(0);
  });
});
