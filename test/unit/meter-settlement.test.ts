import { describe, expect, test } from "bun:test";
import { principalOf } from "../../src/accounts/principal.ts";
import { createManualClock } from "../../src/core/clock.ts";
import { createLogger } from "../../src/core/log.ts";
import type { Endpoint } from "../../src/formats/format.ts";
import { ZERO_USAGE } from "../../src/formats/usage.ts";
import { createMeter, type Admission } from "../../src/metering/meter.ts";
import { createPriceBook } from "../../src/metering/pricing/price-book.ts";
import { createPeriodCounters } from "../../src/metering/quotas.ts";
import type { UsageEvent, UsageRecorder } from "../../src/metering/usage-recorder.ts";
import { createMemoryState } from "../../src/state/memory.ts";
import { accountRow } from "../helpers/account-row.ts";

/**
 * How the meter settles a call's spend into the day and month totals DailyLimit and
 * HardLimit are checked against, when midnight passes between the admission (where the
 * reservation was counted) and the call's row (the day its rollup lands in). One rule
 * serves every call: HTTP calls, streams and realtime responses alike.
 */

const CHAT: Endpoint = { family: "openai", path: "/v1/chat/completions", model: "body", idempotent: false };
// 2 and 8 USD per 1M tokens: 1000 in and 500 out cost 6000 µ-credits.
const PRICES = createPriceBook({ ChatPricing: { "acme-*": { InputText: 2, OutputText: 8, ContextWindow: 8000, MaxOutput: 2000 } } });
const USED = { ...ZERO_USAGE, prompt: 1000, completion: 500 };
const COST = 6_000_000;

const account = accountRow;

/** A meter on the in-memory State, with no rollups (every new period starts at 0) and credit to spare. */
function meterAt(start: number) {
  const clock = createManualClock(start);
  const state = createMemoryState({ seed: () => 0, balance: () => ({ balance: 1e12, staleAt: Infinity }) }, () => clock.now());
  const periods = createPeriodCounters();
  const rows: UsageEvent[] = [];
  // The meter uses only these of the recorder.
  const recorder = { full: () => false, record: (event: UsageEvent) => void rows.push(event), refused: () => {} } as unknown as UsageRecorder;
  const meter = createMeter({ clock, log: createLogger("error", () => {}), prices: () => PRICES, modelLimits: () => [], counts: state.counts, periods, recorder });
  const principal = principalOf(account());
  const admit = () => meter.admit({ principal, endpoint: CHAT, effectiveModel: "acme-chat", json: { model: "acme-chat", max_tokens: 1000 }, bodyBytes: 100 });
  /** Settles like the pipeline does: one usage event whose row starts at `at`. */
  const settle = async (admission: Admission, at: number) => {
    meter.record({
      requestId: "req",
      accountId: 7,
      endpoint: CHAT.path,
      requestedModel: "acme-chat",
      effectiveModel: "acme-chat",
      level: 1,
      keyId: 1,
      status: 200,
      stream: true,
      usage: USED,
      source: "upstream",
      latencyMs: 1,
      at,
      admission,
    });
    await Bun.sleep(0);
  };
  const subtree = account();
  /** The account's subtree spend in a day or a month: what its DailyLimit or HardLimit sees (reservations included). */
  const costIn = (period: string) =>
    state.counts.read(periods.subtree("cost", period.length === 7 ? "month" : "day", subtree), clock.now(), period);
  return { clock, meter, admit, settle, costIn, rows };
}

describe("a settlement across midnight", () => {
  test("admitted before midnight, its row after it (an HTTP call whose first attempt starts past midnight, a realtime response run the next day): the new day and month count the whole cost", async () => {
    const { clock, admit, settle, costIn } = meterAt(Date.UTC(2030, 0, 31, 23, 59, 59, 999));
    const admission = await admit();
    expect(admission.reserved).toBeGreaterThan(COST);
    clock.advance(2);
    await settle(admission, clock.now());
    // The reservation sat in January 31 and January; the row is of February 1: there the whole cost counts.
    // (One `cost − reserved` there left both totals below zero by about a reservation.)
    expect(await costIn("2030-02-01")).toBe(COST);
    expect(await costIn("2030-02")).toBe(COST);
  });

  test("admitted and started before midnight, ended after it (a stream): its day holds it, and the new day is left alone", async () => {
    const { clock, admit, settle, costIn } = meterAt(Date.UTC(2030, 0, 10, 23, 59, 0));
    const early = await admit();
    const started = clock.now();
    clock.advance(2 * 60_000);
    // Another call admitted after midnight: the new day's total holds its reservation.
    const late = await admit();
    await settle(early, started);
    expect(await costIn("2030-01-11")).toBe(late.reserved);
    await settle(late, clock.now());
    expect(await costIn("2030-01-11")).toBe(COST);
  });

  test("a reservation released after midnight (a realtime session closed between responses) leaves the day it was counted in, not the new one", async () => {
    const { clock, meter, admit, costIn, rows } = meterAt(Date.UTC(2030, 0, 10, 23, 59, 0));
    const held = await admit();
    clock.advance(2 * 60_000);
    const next = await admit();
    await meter.release(held);
    // Taken off the new day, the release left it at zero with a call's reservation still in flight there.
    expect(await costIn("2030-01-11")).toBe(next.reserved);
    expect(await costIn("2030-01")).toBe(next.reserved);
    expect(rows).toHaveLength(0);
  });

  test("within one day, one change: reservation out, cost in", async () => {
    const { clock, admit, settle, costIn } = meterAt(Date.UTC(2030, 0, 10, 12, 0, 0));
    const admission = await admit();
    expect(await costIn("2030-01-10")).toBe(admission.reserved);
    clock.advance(60_000);
    await settle(admission, clock.now());
    expect(await costIn("2030-01-10")).toBe(COST);
    expect(await costIn("2030-01")).toBe(COST);
  });
});
