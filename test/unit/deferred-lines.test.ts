import { describe, expect, test } from "bun:test";
import { splitAdmission, type CheckedCounters } from "../../src/state/redis/deferred-lines.ts";
import type { AdmitLine, Counter, GaugeCounter, PeriodCounter, WindowCounter } from "../../src/state/state.ts";

const T0 = Date.UTC(2026, 2, 10, 12);
const windowOf = (key: string): WindowCounter => ({ kind: "window", key, windowMs: 60_000 });
const periodOf = (key: string): PeriodCounter => ({ kind: "period", key, seed: { measure: "requests", accountId: 7 } });
const gaugeOf = (key: string): GaugeCounter => ({ kind: "gauge", key });
const checkedSet = (): CheckedCounters => ({ keys: new Set(), keyOf: (counter: Counter) => (counter.kind === "credit" ? `c:${counter.accountId}` : `${counter.kind}:${counter.key}`) });

describe("an admission on Redis: the lines checked at once and the amounts that follow", () => {
  test("lines without a limit become changes gathered with the settlements; checked lines keep their indexes", () => {
    const rpm = windowOf("a:rpm");
    const rph = windowOf("a:rph");
    const day = periodOf("a:rpd");
    const gauge = gaugeOf("a:calls");
    const lines: AdmitLine[] = [
      { counter: rpm, limit: 10, add: 1 },
      { counter: rph, add: 1 },
      { counter: day, period: "2026-03-10", add: 1 },
      { counter: gauge, add: 1 },
      { counter: { kind: "credit", accountId: 7 }, limit: 0, add: 500 },
    ];
    const split = splitAdmission(lines, T0, checkedSet());
    expect(split.now).toEqual([lines[0]!, lines[4]!]);
    expect(split.indexes).toEqual([0, 4]);
    expect(split.later).toEqual([
      { counter: rph, at: T0, delta: 1 },
      { counter: day, period: "2026-03-10", delta: 1 },
      { counter: gauge, delta: 1 },
    ]);
    expect(split.flushFirst).toBe(true);
  });

  test("credit is reserved in the admission even without a limit, and a checked line's held gauge is counted with it", () => {
    const tpm = windowOf("a:tpm");
    const held = gaugeOf("a:tokens-in-flight");
    const lines: AdmitLine[] = [
      { counter: tpm, limit: 1000, add: 300, held },
      { counter: held, add: 300 },
      { counter: { kind: "credit", accountId: 7 }, add: 20 },
    ];
    const split = splitAdmission(lines, T0, checkedSet());
    expect(split.now).toBe(lines);
    expect(split.indexes).toBeUndefined();
    expect(split.later).toEqual([]);
  });

  test("a counter checked once is counted in the admission from then on, by its key, and only its first check flushes", () => {
    const checked = checkedSet();
    const first = splitAdmission([{ counter: windowOf("a:rpm"), add: 1 }], T0, checked);
    expect(first.now).toEqual([]);
    expect(first.flushFirst).toBe(false);
    expect(splitAdmission([{ counter: windowOf("a:rpm"), limit: 5, add: 1 }], T0, checked).flushFirst).toBe(true);
    // Another object of the same counter, unchecked this time: counted at once.
    const again = splitAdmission([{ counter: windowOf("a:rpm"), add: 1 }, { counter: windowOf("a:rph"), add: 1 }], T0, checked);
    expect(again.now.map((line) => line.counter)).toEqual([windowOf("a:rpm")]);
    expect(again.indexes).toEqual([0]);
    expect(again.flushFirst).toBe(false);
    expect(again.later).toEqual([{ counter: windowOf("a:rph"), at: T0, delta: 1 }]);
  });

  test("the remembered counters are forgotten when they grow past their bound, between admissions: a held gauge still goes with its check", () => {
    const checked = checkedSet();
    for (let i = 0; i < 100_000; i++) checked.keys.add(`window:old-${i}`);
    const held = gaugeOf("a:tokens-in-flight");
    const lines: AdmitLine[] = [
      { counter: windowOf("a:tpm"), limit: 1000, add: 300, held },
      { counter: held, add: 300 },
    ];
    const split = splitAdmission(lines, T0, checked);
    expect(split.now).toBe(lines);
    expect(split.flushFirst).toBe(true);
    expect([...checked.keys].sort()).toEqual(["gauge:a:tokens-in-flight", "window:a:tpm"]);
  });

  test("a line that adds nothing and checks nothing is left out altogether", () => {
    const split = splitAdmission([{ counter: windowOf("a:tpm"), add: 0 }, { counter: windowOf("a:rpm"), limit: 3, add: 1 }], T0, checkedSet());
    expect(split.now.map((line) => line.limit)).toEqual([3]);
    expect(split.indexes).toEqual([1]);
    expect(split.later).toEqual([]);
  });
});
