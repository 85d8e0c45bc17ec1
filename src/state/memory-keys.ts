import { DONE, NO, NOTHING, YES } from "./settled.ts";
import { applyVerdict, setSleep } from "./key-health.ts";
import type { KeyHealth, KeyRef, KeyState } from "./state.ts";

/** Provider keys' health in this process: one cell per tenant and key, started from the stored sleep. */
export function createMemoryKeys(): KeyState {
  // By tenant, then key id: numbers all the way, so the request path builds no key strings.
  const tenants = new Map<number, Map<number, KeyHealth>>();
  const cellsOf = (tenantId: number) => {
    let cells = tenants.get(tenantId);
    if (!cells) tenants.set(tenantId, (cells = new Map()));
    return cells;
  };
  const cellOf = (tenantId: number, key: KeyRef): KeyHealth => {
    const cells = cellsOf(tenantId);
    let cell = cells.get(key.id);
    if (!cell) cells.set(key.id, (cell = { ...key.stored, inFlight: 0, failures: 0, probing: false }));
    return cell;
  };
  return {
    health(tenantId, keys) {
      return Promise.resolve(keys.map((key) => ({ ...cellOf(tenantId, key) })));
    },
    take(tenantId, key, probe) {
      const cell = cellOf(tenantId, key);
      if (probe) {
        if (cell.probing) return NO;
        cell.probing = true;
      }
      cell.inFlight++;
      return YES;
    },
    release(tenantId, keyId) {
      const cell = tenants.get(tenantId)?.get(keyId);
      if (!cell) return DONE;
      cell.inFlight = Math.max(0, cell.inFlight - 1);
      // A probe that ended without a verdict (client gone) must not block the next one.
      cell.probing = false;
      return DONE;
    },
    record(tenantId, key, verdict, now) {
      const change = applyVerdict(cellOf(tenantId, key), key.noSleep, verdict, now);
      return change ? Promise.resolve(change) : NOTHING;
    },
    async setSleep(tenantId, key, sleep) {
      const cell = cellOf(tenantId, key);
      setSleep(cell, sleep);
      cell.failures = 0;
    },
  };
}
