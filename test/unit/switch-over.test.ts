import { describe, expect, test } from "bun:test";
import { createMemoryCounters } from "../../src/metering/counters.ts";
import { createSwitchOver, QUIET_MS, SWITCH_THRESHOLD, SWITCH_WINDOW_MS } from "../../src/routing/switch-over.ts";

const T0 = Date.UTC(2026, 0, 1);
const ONE_TO_TWO = new Map([[1, 2]]);
const CHAIN = new Map([
  [1, 2],
  [2, 3],
]);

function switched(backups: ReadonlyMap<number, number> = ONE_TO_TWO, errorsAt = T0) {
  const switchOver = createSwitchOver(createMemoryCounters());
  for (let i = 0; i <= SWITCH_THRESHOLD; i++) switchOver.recordError(1, errorsAt);
  expect(switchOver.resolve(1, backups, errorsAt)).toEqual({ level: 2, probe: false });
  return switchOver;
}

describe("switch-over", () => {
  test("the threshold is more than 5 errors in one minute", () => {
    expect(SWITCH_THRESHOLD).toBe(5);
    expect(SWITCH_WINDOW_MS).toBe(60_000);
    expect(QUIET_MS).toBe(60_000);
  });

  test("five errors keep the primary; the sixth switches to the backup", () => {
    const switchOver = createSwitchOver(createMemoryCounters());
    for (let i = 0; i < 5; i++) switchOver.recordError(1, T0 + i * 1000);
    expect(switchOver.isSwitched(1)).toBe(false);
    expect(switchOver.resolve(1, ONE_TO_TWO, T0 + 5000)).toEqual({ level: 1, probe: false });
    switchOver.recordError(1, T0 + 5000);
    expect(switchOver.isSwitched(1)).toBe(true);
    expect(switchOver.resolve(1, ONE_TO_TWO, T0 + 5000)).toEqual({ level: 2, probe: false });
  });

  test("errors spread over more than a minute do not switch", () => {
    const switchOver = createSwitchOver(createMemoryCounters());
    for (let i = 0; i < 5; i++) switchOver.recordError(1, T0);
    switchOver.recordError(1, T0 + 61_000);
    expect(switchOver.isSwitched(1)).toBe(false);
    expect(switchOver.resolve(1, ONE_TO_TWO, T0 + 61_000)).toEqual({ level: 1, probe: false });
  });

  test("six errors within the same minute switch even when spread over it", () => {
    const switchOver = createSwitchOver(createMemoryCounters());
    for (let i = 0; i < 6; i++) switchOver.recordError(1, T0 + i * 11_000);
    expect(switchOver.isSwitched(1)).toBe(true);
  });

  test("a Level without a backup keeps its traffic however many errors it has", () => {
    const switchOver = createSwitchOver(createMemoryCounters());
    for (let i = 0; i < 20; i++) switchOver.recordError(1, T0);
    expect(switchOver.resolve(1, new Map(), T0)).toEqual({ level: 1, probe: false });
    expect(switchOver.resolve(1, new Map([[2, 3]]), T0)).toEqual({ level: 1, probe: false });
  });

  test("errors on the backup do not switch the primary", () => {
    const switchOver = createSwitchOver(createMemoryCounters());
    for (let i = 0; i < 10; i++) switchOver.recordError(2, T0);
    expect(switchOver.resolve(1, ONE_TO_TWO, T0)).toEqual({ level: 1, probe: false });
  });

  test("after a quiet minute exactly one call probes the primary", () => {
    const switchOver = switched();
    expect(switchOver.resolve(1, ONE_TO_TWO, T0 + QUIET_MS - 1)).toEqual({ level: 2, probe: false });
    expect(switchOver.resolve(1, ONE_TO_TWO, T0 + QUIET_MS)).toEqual({ level: 1, probe: true });
    // While the probe is out, everyone else stays on the backup.
    expect(switchOver.resolve(1, ONE_TO_TWO, T0 + QUIET_MS)).toEqual({ level: 2, probe: false });
    expect(switchOver.resolve(1, ONE_TO_TWO, T0 + 5 * QUIET_MS)).toEqual({ level: 2, probe: false });
  });

  test("a successful probe returns traffic to the primary with a clean error count", () => {
    const switchOver = switched();
    expect(switchOver.resolve(1, ONE_TO_TWO, T0 + QUIET_MS).probe).toBe(true);
    switchOver.recordSuccess(1, true);
    expect(switchOver.isSwitched(1)).toBe(false);
    expect(switchOver.resolve(1, ONE_TO_TWO, T0 + QUIET_MS)).toEqual({ level: 1, probe: false });
    // The errors before the return do not count towards the next switch.
    switchOver.recordError(1, T0 + QUIET_MS);
    expect(switchOver.isSwitched(1)).toBe(false);
  });

  test("a failed probe keeps the backup for another quiet minute, then probes again", () => {
    const switchOver = switched();
    const probeAt = T0 + QUIET_MS;
    expect(switchOver.resolve(1, ONE_TO_TWO, probeAt).probe).toBe(true);
    switchOver.recordError(1, probeAt);
    expect(switchOver.isSwitched(1)).toBe(true);
    expect(switchOver.resolve(1, ONE_TO_TWO, probeAt)).toEqual({ level: 2, probe: false });
    expect(switchOver.resolve(1, ONE_TO_TWO, probeAt + QUIET_MS - 1)).toEqual({ level: 2, probe: false });
    expect(switchOver.resolve(1, ONE_TO_TWO, probeAt + QUIET_MS)).toEqual({ level: 1, probe: true });
  });

  test("an abandoned probe (no verdict) lets the next call probe", () => {
    const switchOver = switched();
    expect(switchOver.resolve(1, ONE_TO_TWO, T0 + QUIET_MS).probe).toBe(true);
    switchOver.abandonProbe(1);
    expect(switchOver.resolve(1, ONE_TO_TWO, T0 + QUIET_MS)).toEqual({ level: 1, probe: true });
  });

  test("a late success of a call that is not the probe does not end the switch", () => {
    const switchOver = switched();
    switchOver.recordSuccess(1, false);
    expect(switchOver.isSwitched(1)).toBe(true);
    expect(switchOver.resolve(1, ONE_TO_TWO, T0 + 1)).toEqual({ level: 2, probe: false });
  });

  test("chains are followed: 1=2,2=3 with both primaries switched goes to 3", () => {
    const switchOver = createSwitchOver(createMemoryCounters());
    for (let i = 0; i < 6; i++) switchOver.recordError(1, T0);
    expect(switchOver.resolve(1, CHAIN, T0)).toEqual({ level: 2, probe: false });
    for (let i = 0; i < 6; i++) switchOver.recordError(2, T0);
    expect(switchOver.resolve(1, CHAIN, T0)).toEqual({ level: 3, probe: false });
    expect(switchOver.resolve(2, CHAIN, T0)).toEqual({ level: 3, probe: false });
    // Only Level 2 switched: calls for Level 1 stay on Level 1.
    const other = createSwitchOver(createMemoryCounters());
    for (let i = 0; i < 6; i++) other.recordError(2, T0);
    expect(other.resolve(1, CHAIN, T0)).toEqual({ level: 1, probe: false });
  });

  test("in a chain the first quiet primary gets the probe", () => {
    const switchOver = createSwitchOver(createMemoryCounters());
    for (let i = 0; i < 6; i++) switchOver.recordError(1, T0);
    for (let i = 0; i < 6; i++) switchOver.recordError(2, T0 + 30_000);
    expect(switchOver.resolve(1, CHAIN, T0 + QUIET_MS)).toEqual({ level: 1, probe: true });
    expect(switchOver.resolve(1, CHAIN, T0 + QUIET_MS)).toEqual({ level: 3, probe: false });
  });

  test("a cycle that slipped through never loops forever", () => {
    const switchOver = createSwitchOver(createMemoryCounters());
    for (let i = 0; i < 6; i++) {
      switchOver.recordError(1, T0);
      switchOver.recordError(2, T0);
    }
    const cycle = new Map([
      [1, 2],
      [2, 1],
    ]);
    expect(switchOver.resolve(1, cycle, T0)).toEqual({ level: 2, probe: false });
  });
});
