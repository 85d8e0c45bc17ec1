import { causeMessage } from "../core/errors.ts";
import { outage, type Logger } from "../core/log.ts";

/** Takes charges off what counts as unwritten (`CreditState.flushed`); may fail (Redis away). */
type Flushed = (charged: ReadonlyMap<number, number>, version?: number) => Promise<void>;

const RETRY_MS = 250;

/**
 * Tells the shared state that charges are in the ledger now, for rows an instance wrote
 * itself (a claim from Redis says it in the script that drops the claim). Such rows are
 * written directly when Redis refused their append, so the announcement often meets a
 * Redis still away. One that fails is kept and sent again, in order, until Redis takes it:
 * lost, its charges would count as unwritten for good, the account reading short by them
 * on every instance. (A retry of one whose answer alone was lost takes the charges off
 * twice: the unwritten sum reads low until it comes back to zero, where it is clamped.)
 */
export function createWrittenCharges(flushed: Flushed, log: Logger, retryMs = RETRY_MS) {
  const waiting: Array<{ charged: ReadonlyMap<number, number>; version: number | undefined }> = [];
  const { failed, succeeded } = outage(log, "warn", "written charges are noted in the State again");
  let sending: Promise<void> | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;

  /** Sends what waits, oldest first; resolves false when one failed (it and those after it wait). */
  const sendWaiting = async (): Promise<boolean> => {
    while (waiting.length > 0) {
      const next = waiting[0]!;
      try {
        await flushed(next.charged, next.version);
      } catch (error) {
        failed("the State could not note written charges; they are sent again shortly", { waiting: waiting.length, error: causeMessage(error) });
        return false;
      }
      waiting.shift();
    }
    succeeded();
    return true;
  };
  const send = () => {
    sending ??= sendWaiting()
      .then((done) => {
        if (!done) timer ??= setTimeout(() => ((timer = undefined), send()), retryMs);
      })
      .finally(() => (sending = undefined));
    return sending;
  };

  return {
    /** Charges written (per account), and the ledger's version once they were, when one write made them all. */
    announce(charged: ReadonlyMap<number, number>, version?: number): void {
      if (charged.size === 0) return;
      waiting.push({ charged, version });
      void send();
    },
    /** Announcements not yet taken. */
    waiting: () => waiting.length,
    /** A last try at what waits (a clean stop); what still fails is named in an error. */
    async stop(): Promise<void> {
      clearTimeout(timer);
      timer = undefined;
      await sending;
      if (await sendWaiting()) return;
      const total = new Map<number, number>();
      for (const { charged } of waiting) for (const [account, amount] of charged) total.set(account, (total.get(account) ?? 0) + amount);
      log.error("written charges the State could not note: they count as unwritten until Redis forgets them", {
        accounts: total.size,
        cost: [...total.values()].reduce((sum, amount) => sum + amount, 0),
      });
    },
  };
}

export type WrittenCharges = ReturnType<typeof createWrittenCharges>;
