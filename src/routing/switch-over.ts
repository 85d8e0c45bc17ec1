import type { Counters } from "../metering/counters.ts";

/** More than this many upstream errors within the window switch a Level to its backup (spec 3, 8). */
export const SWITCH_THRESHOLD = 5;
export const SWITCH_WINDOW_MS = 60_000;
/** After this long without errors on a switched Level, one probe request tries it again. */
export const QUIET_MS = 60_000;

interface LevelState {
  switchedAt: number | null;
  lastErrorAt: number;
  probing: boolean;
}

/**
 * Tracks upstream errors per Level and decides which Level serves a call.
 * A primary with a backup switches after more than 5 errors (5xx, 429, network,
 * timeout) in a minute; after a quiet minute a single probe call goes back to the
 * primary, and its success switches traffic back.
 */
export interface SwitchOver {
  /** The Level that should serve a call routed to `level`, following chains; `probe` when this call is the primary's probe. */
  resolve(level: number, backups: ReadonlyMap<number, number>, now: number): { level: number; probe: boolean };
  recordError(level: number, now: number): void;
  recordSuccess(level: number, probe: boolean): void;
  /** Ends a probe that got no verdict (e.g. the client went away). */
  abandonProbe(level: number): void;
  isSwitched(level: number): boolean;
}

/** `prefix` keeps tenants' error counts apart when they share one Counters. */
export function createSwitchOver(counters: Counters, prefix = ""): SwitchOver {
  const states = new Map<number, LevelState>();
  const stateOf = (level: number) => {
    let state = states.get(level);
    if (!state) {
      state = { switchedAt: null, lastErrorAt: -Infinity, probing: false };
      states.set(level, state);
    }
    return state;
  };
  const keyOf = (level: number) => `switch:${prefix}${level}`;

  return {
    resolve(level, backups, now) {
      let current = level;
      const seen = new Set<number>();
      for (;;) {
        seen.add(current);
        const backup = backups.get(current);
        const state = states.get(current);
        if (backup === undefined || seen.has(backup) || !state || state.switchedAt === null) {
          return { level: current, probe: false };
        }
        if (!state.probing && now - state.lastErrorAt >= QUIET_MS) {
          state.probing = true;
          return { level: current, probe: true };
        }
        current = backup;
      }
    },
    recordError(level, now) {
      const state = stateOf(level);
      state.lastErrorAt = now;
      state.probing = false;
      counters.add(keyOf(level), 1, now, SWITCH_WINDOW_MS);
      if (state.switchedAt === null && counters.sum(keyOf(level), now, SWITCH_WINDOW_MS) > SWITCH_THRESHOLD) {
        state.switchedAt = now;
      }
    },
    recordSuccess(level, probe) {
      const state = states.get(level);
      if (!state) return;
      if (probe || state.switchedAt === null) {
        state.switchedAt = null;
        state.probing = false;
        if (probe) counters.clear(keyOf(level));
      }
    },
    abandonProbe(level) {
      const state = states.get(level);
      if (state) state.probing = false;
    },
    isSwitched: (level) => states.get(level)?.switchedAt != null,
  };
}
