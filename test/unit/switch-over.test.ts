import { describe, expect, test } from "bun:test";
import { createMemoryState } from "../../src/state/memory.ts";
import { createSwitchOver, QUIET_MS, SWITCH_THRESHOLD, SWITCH_WINDOW_MS } from "../../src/routing/switch-over.ts";

const T0 = Date.UTC(2026, 0, 1);

/** Switch-over of tenant 0 over a fresh in-memory State. */
const fresh = () => createSwitchOver(createMemoryState({ seed: () => 0, balance: () => ({ balance: 0, staleAt: Infinity }) }, () => T0).levels, 0);
const ONE_TO_TWO = new Map([[1, 2]]);
const CHAIN = new Map([
  [1, 2],
  [2, 3],
]);

async function switched(backups: ReadonlyMap<number, number> = ONE_TO_TWO, errorsAt = T0) {
  const switchOver = fresh();
  for (let i = 0; i <= SWITCH_THRESHOLD; i++) await switchOver.recordError(1, errorsAt);
  expect(await switchOver.resolve(1, backups, errorsAt)).toEqual({ level: 2, probe: false });
  return switchOver;
}

describe("switch-over", () => {
  test("the threshold is more than 5 errors in one minute", async () => {
    expect(SWITCH_THRESHOLD).toBe(5);
    expect(SWITCH_WINDOW_MS).toBe(60_000);
    expect(QUIET_MS).toBe(60_000);
  });

  test("five errors keep the primary; the sixth switches to the backup", async () => {
    const switchOver = fresh();
    for (let i = 0; i < 5; i++) await switchOver.recordError(1, T0 + i * 1000);
    expect(switchOver.isSwitched(1)).toBe(false);
    expect(await switchOver.resolve(1, ONE_TO_TWO, T0 + 5000)).toEqual({ level: 1, probe: false });
    await switchOver.recordError(1, T0 + 5000);
    expect(switchOver.isSwitched(1)).toBe(true);
    expect(await switchOver.resolve(1, ONE_TO_TWO, T0 + 5000)).toEqual({ level: 2, probe: false });
  });

  test("errors spread over more than a minute do not switch", async () => {
    const switchOver = fresh();
    for (let i = 0; i < 5; i++) await switchOver.recordError(1, T0);
    await switchOver.recordError(1, T0 + 61_000);
    expect(switchOver.isSwitched(1)).toBe(false);
    expect(await switchOver.resolve(1, ONE_TO_TWO, T0 + 61_000)).toEqual({ level: 1, probe: false });
  });

  test("six errors within the same minute switch even when spread over it", async () => {
    const switchOver = fresh();
    for (let i = 0; i < 6; i++) await switchOver.recordError(1, T0 + i * 11_000);
    expect(switchOver.isSwitched(1)).toBe(true);
  });

  test("a Level without a backup keeps its traffic however many errors it has", async () => {
    const switchOver = fresh();
    for (let i = 0; i < 20; i++) await switchOver.recordError(1, T0);
    expect(await switchOver.resolve(1, new Map(), T0)).toEqual({ level: 1, probe: false });
    expect(await switchOver.resolve(1, new Map([[2, 3]]), T0)).toEqual({ level: 1, probe: false });
  });

  test("errors on the backup do not switch the primary", async () => {
    const switchOver = fresh();
    for (let i = 0; i < 10; i++) await switchOver.recordError(2, T0);
    expect(await switchOver.resolve(1, ONE_TO_TWO, T0)).toEqual({ level: 1, probe: false });
  });

  test("after a quiet minute exactly one call probes the primary", async () => {
    const switchOver = await switched();
    expect(await switchOver.resolve(1, ONE_TO_TWO, T0 + QUIET_MS - 1)).toEqual({ level: 2, probe: false });
    expect(await switchOver.resolve(1, ONE_TO_TWO, T0 + QUIET_MS)).toEqual({ level: 1, probe: true });
    // While the probe is out, everyone else stays on the backup.
    expect(await switchOver.resolve(1, ONE_TO_TWO, T0 + QUIET_MS)).toEqual({ level: 2, probe: false });
    expect(await switchOver.resolve(1, ONE_TO_TWO, T0 + 5 * QUIET_MS)).toEqual({ level: 2, probe: false });
  });

  test("a successful probe returns traffic to the primary with a clean error count", async () => {
    const switchOver = await switched();
    expect((await switchOver.resolve(1, ONE_TO_TWO, T0 + QUIET_MS)).probe).toBe(true);
    await switchOver.recordSuccess(1, true);
    expect(switchOver.isSwitched(1)).toBe(false);
    expect(await switchOver.resolve(1, ONE_TO_TWO, T0 + QUIET_MS)).toEqual({ level: 1, probe: false });
    // The errors before the return do not count towards the next switch.
    await switchOver.recordError(1, T0 + QUIET_MS);
    expect(switchOver.isSwitched(1)).toBe(false);
  });

  test("a failed probe keeps the backup for another quiet minute, then probes again", async () => {
    const switchOver = await switched();
    const probeAt = T0 + QUIET_MS;
    expect((await switchOver.resolve(1, ONE_TO_TWO, probeAt)).probe).toBe(true);
    await switchOver.recordError(1, probeAt);
    expect(switchOver.isSwitched(1)).toBe(true);
    expect(await switchOver.resolve(1, ONE_TO_TWO, probeAt)).toEqual({ level: 2, probe: false });
    expect(await switchOver.resolve(1, ONE_TO_TWO, probeAt + QUIET_MS - 1)).toEqual({ level: 2, probe: false });
    expect(await switchOver.resolve(1, ONE_TO_TWO, probeAt + QUIET_MS)).toEqual({ level: 1, probe: true });
  });

  test("an abandoned probe (no verdict) lets the next call probe", async () => {
    const switchOver = await switched();
    expect((await switchOver.resolve(1, ONE_TO_TWO, T0 + QUIET_MS)).probe).toBe(true);
    await switchOver.abandonProbe(1);
    expect(await switchOver.resolve(1, ONE_TO_TWO, T0 + QUIET_MS)).toEqual({ level: 1, probe: true });
  });

  test("a late success of a call that is not the probe does not end the switch", async () => {
    const switchOver = await switched();
    await switchOver.recordSuccess(1, false);
    expect(switchOver.isSwitched(1)).toBe(true);
    expect(await switchOver.resolve(1, ONE_TO_TWO, T0 + 1)).toEqual({ level: 2, probe: false });
  });

  test("chains are followed: 1=2,2=3 with both primaries switched goes to 3", async () => {
    const switchOver = fresh();
    for (let i = 0; i < 6; i++) await switchOver.recordError(1, T0);
    expect(await switchOver.resolve(1, CHAIN, T0)).toEqual({ level: 2, probe: false });
    for (let i = 0; i < 6; i++) await switchOver.recordError(2, T0);
    expect(await switchOver.resolve(1, CHAIN, T0)).toEqual({ level: 3, probe: false });
    expect(await switchOver.resolve(2, CHAIN, T0)).toEqual({ level: 3, probe: false });
    // Only Level 2 switched: calls for Level 1 stay on Level 1.
    const other = fresh();
    for (let i = 0; i < 6; i++) await other.recordError(2, T0);
    expect(await other.resolve(1, CHAIN, T0)).toEqual({ level: 1, probe: false });
  });

  test("in a chain the first quiet primary gets the probe", async () => {
    const switchOver = fresh();
    for (let i = 0; i < 6; i++) await switchOver.recordError(1, T0);
    for (let i = 0; i < 6; i++) await switchOver.recordError(2, T0 + 30_000);
    expect(await switchOver.resolve(1, CHAIN, T0 + QUIET_MS)).toEqual({ level: 1, probe: true });
    expect(await switchOver.resolve(1, CHAIN, T0 + QUIET_MS)).toEqual({ level: 3, probe: false });
  });

  test("a cycle that slipped through never loops forever", async () => {
    const switchOver = fresh();
    for (let i = 0; i < 6; i++) {
      await switchOver.recordError(1, T0);
      await switchOver.recordError(2, T0);
    }
    const cycle = new Map([
      [1, 2],
      [2, 1],
    ]);
    expect(await switchOver.resolve(1, cycle, T0)).toEqual({ level: 2, probe: false });
  });
});

describe("switch-over: reads shared by calls (a shared State)", () => {
  test("calls within the reuse time share one status read; a switch, a probe or forgetReads drops it", async () => {
    const levels = createMemoryState({ seed: () => 0, balance: () => ({ balance: 0, staleAt: Infinity }) }, () => T0).levels;
    let reads = 0;
    const counted = { ...levels, status: (tenantId: number, level: number) => (reads++, levels.status(tenantId, level)) };
    let now = T0;
    const switchOver = createSwitchOver(counted, 0, undefined, { ms: 100, now: () => now });
    const resolveAhead = () => switchOver.resolve(1, ONE_TO_TWO, now, switchOver.readAhead(1, ONE_TO_TWO));
    for (let i = 0; i < 3; i++) expect(await resolveAhead()).toEqual({ level: 1, probe: false });
    expect(reads).toBe(1);
    now += 100;
    await resolveAhead();
    expect(reads).toBe(2);
    // This process's error that switches the Level drops the shared read: the next call goes to the backup.
    for (let i = 0; i <= SWITCH_THRESHOLD; i++) await switchOver.recordError(1, now);
    expect(await resolveAhead()).toEqual({ level: 2, probe: false });
    expect(reads).toBe(3);
    // Another instance's change, heard on the bus.
    switchOver.forgetReads();
    await resolveAhead();
    expect(reads).toBe(4);
    // Without a reuse time every call reads.
    const plain = createSwitchOver(counted, 0);
    for (let i = 0; i < 2; i++) await plain.resolve(1, ONE_TO_TWO, now, plain.readAhead(1, ONE_TO_TWO));
    expect(reads).toBe(6);
  });
});
