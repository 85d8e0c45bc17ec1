import { applyVerdict, setSleep } from "./key-health.ts";
import type { KeyHealth, KeyRef, KeyState } from "./state.ts";

/** Provider keys' health in this process: one cell per tenant and key, started from the stored sleep. */
export function createMemoryKeys(): KeyState {
  const cells = new Map<string, KeyHealth>();
  const cellOf = (tenantId: number, key: KeyRef): KeyHealth => {
    const name = `${tenantId}:${key.id}`;
    let cell = cells.get(name);
    if (!cell) cells.set(name, (cell = { ...key.stored, inFlight: 0, failures: 0, probing: false }));
    return cell;
  };
  return {
    async health(tenantId, keys) {
      return keys.map((key) => ({ ...cellOf(tenantId, key) }));
    },
    async take(tenantId, key, probe) {
      const cell = cellOf(tenantId, key);
      if (probe) {
        if (cell.probing) return false;
        cell.probing = true;
      }
      cell.inFlight++;
      return true;
    },
    async release(tenantId, keyId) {
      const cell = cells.get(`${tenantId}:${keyId}`);
      if (!cell) return;
      cell.inFlight = Math.max(0, cell.inFlight - 1);
      // A probe that ended without a verdict (client gone) must not block the next one.
      cell.probing = false;
    },
    async record(tenantId, key, verdict, now) {
      return applyVerdict(cellOf(tenantId, key), key.noSleep, verdict, now);
    },
    async setSleep(tenantId, key, sleep) {
      const cell = cellOf(tenantId, key);
      setSleep(cell, sleep);
      cell.failures = 0;
    },
  };
}
