/** The memory State's Levels (switch-over). */
import type { createMemoryCounters } from "./memory-windows.ts";
import type { LevelState, LevelStatus } from "./state.ts";

/** Switch-over state of every tenant's Levels, with their error windows. */
export function createMemoryLevels(cells: ReturnType<typeof createMemoryCounters>): LevelState {
  // By tenant, then Level (numbers: the request path reads a Level's status on every call).
  const tenants = new Map<number, Map<number, LevelStatus>>();
  /** The error window's cell: a string key, made only when an error is counted. */
  const windowKey = (tenantId: number, level: number) => `switch:${tenantId}:${level}`;
  const find = (tenantId: number, level: number) => tenants.get(tenantId)?.get(level);
  const stateOf = (tenantId: number, level: number) => {
    let levels = tenants.get(tenantId);
    if (!levels) tenants.set(tenantId, (levels = new Map()));
    let state = levels.get(level);
    if (!state) levels.set(level, (state = { switchedAt: null, lastErrorAt: null, probing: false }));
    return state;
  };
  /** A Level never seen with an error: the answer of nearly every call. */
  const NORMAL: Promise<LevelStatus> = Promise.resolve(Object.freeze({ switchedAt: null, lastErrorAt: null, probing: false }));
  return {
    status(tenantId, level) {
      const state = find(tenantId, level);
      return state ? Promise.resolve({ ...state }) : NORMAL;
    },
    async recordError(tenantId, level, now, threshold, windowMs) {
      const key = windowKey(tenantId, level);
      const state = stateOf(tenantId, level);
      state.lastErrorAt = now;
      state.probing = false;
      cells.add(key, 1, now, windowMs);
      if (state.switchedAt === null && cells.sum(key, now, windowMs) > threshold) state.switchedAt = now;
      return { ...state };
    },
    async claimProbe(tenantId, level, quietSince) {
      const state = find(tenantId, level);
      if (!state || state.switchedAt === null || state.probing || (state.lastErrorAt ?? -Infinity) > quietSince) return false;
      state.probing = true;
      return true;
    },
    async recover(tenantId, level, probe) {
      const state = find(tenantId, level);
      if (!state) return;
      if (probe || state.switchedAt === null) {
        state.switchedAt = null;
        state.probing = false;
        if (probe) cells.clear(windowKey(tenantId, level));
      }
    },
    async abandonProbe(tenantId, level) {
      const state = find(tenantId, level);
      if (state) state.probing = false;
    },
  };
}
