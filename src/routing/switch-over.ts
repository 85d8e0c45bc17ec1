import type { LevelState, LevelStatus } from "../state/state.ts";
import type { SystemEvent } from "./key-pool.ts";
import { createSharedReads } from "./shared-reads.ts";

/** More than this many upstream errors within the window switch a Level to its backup (spec 3, 8). */
export const SWITCH_THRESHOLD = 5;
export const SWITCH_WINDOW_MS = 60_000;
/** After this long without errors on a switched Level, one probe request tries it again. */
export const QUIET_MS = 60_000;

/**
 * Tracks upstream errors per Level and decides which Level serves a call.
 * A primary with a backup switches after more than 5 errors (5xx, 429, network,
 * timeout) in a minute; after a quiet minute a single probe call goes back to the
 * primary, and its success switches traffic back. The counts and states live in the
 * State (shared by instances when it is); these are the rules.
 */
export interface SwitchOver {
  /** The Level that should serve a call routed to `level`, following chains; `probe` when this call is the primary's probe. */
  resolve(level: number, backups: ReadonlyMap<number, number>, now: number, ahead?: Promise<LevelStatus>): Promise<{ level: number; probe: boolean }>;
  /** Starts reading the status `resolve` reads first (the Level's own, when it has a backup), for `resolve`'s `ahead`. */
  readAhead(level: number, backups: ReadonlyMap<number, number>): Promise<LevelStatus> | undefined;
  recordError(level: number, now: number): Promise<void>;
  recordSuccess(level: number, probe: boolean): Promise<void>;
  /** Ends a probe that got no verdict (e.g. the client went away). */
  abandonProbe(level: number): Promise<void>;
  /** Whether the Level was switched when this process last looked (for metrics). */
  isSwitched(level: number): boolean;
  /** Drops the status reads calls share (another instance switched a Level over or back). */
  forgetReads(): void;
}

export function createSwitchOver(
  levels: LevelState,
  tenantId: number,
  onSystemEvent?: SystemEvent,
  /** How long calls may share one read of a Level's status (`readAhead`); 0: a read per call. */
  reuse: { ms: number; now: () => number } = { ms: 0, now: () => 0 },
): SwitchOver {
  /** What this process last saw of each Level: read by metrics. */
  const seen = new Map<number, boolean>();
  const note = (level: number, status: LevelStatus) => seen.set(level, status.switchedAt !== null);
  /**
   * Reads of a Level's status that calls within `reuse.ms` share (on a shared State each
   * is a Redis script ahead of the call's admission); this process's own changes drop them.
   */
  const reads = createSharedReads<Promise<LevelStatus>>(reuse.ms, reuse.now);

  return {
    readAhead(level, backups) {
      if (!backups.has(level)) return undefined;
      const shared = reads.get(level);
      if (shared) return shared;
      const status = levels.status(tenantId, level);
      // Read ahead of a resolve that may never come (the call refused): its failure is resolve's to report.
      status.catch(() => {});
      return reads.keep(level, status, status);
    },
    async resolve(level, backups, now, ahead) {
      let current = level;
      const visited = new Set<number>();
      for (;;) {
        visited.add(current);
        const backup = backups.get(current);
        if (backup === undefined || visited.has(backup)) return { level: current, probe: false };
        const status = await (current === level && ahead ? ahead : levels.status(tenantId, current));
        note(current, status);
        if (status.switchedAt === null) return { level: current, probe: false };
        if (await levels.claimProbe(tenantId, current, now - QUIET_MS)) {
          reads.forget(current);
          return { level: current, probe: true };
        }
        current = backup;
      }
    },
    async recordError(level, now) {
      const status = await levels.recordError(tenantId, level, now, SWITCH_THRESHOLD, SWITCH_WINDOW_MS);
      note(level, status);
      if (status.switchedAt !== null) reads.forget(level);
      // The error that switched the Level (its switch time is this error's): one entry, whichever instance saw it.
      if (status.switchedAt === now) onSystemEvent?.("level.switch_over", { level, errors: SWITCH_THRESHOLD + 1, window_s: SWITCH_WINDOW_MS / 1000 });
    },
    async recordSuccess(level, probe) {
      // Only a probe's success changes anything: a call that is not the probe was served
      // by a Level its status showed unswitched (or one without a backup), and an
      // unswitched Level holds no probe (only a switched one can be claimed), so the
      // State would have nothing to undo. Skipping it saves the hot path a State call
      // (a Redis script on every call of a Level with a backup).
      if (!probe) return;
      await levels.recover(tenantId, level, probe);
      reads.forget(level);
      if (probe) {
        seen.set(level, false);
        // Only the probe's holder switches back: one entry.
        onSystemEvent?.("level.switch_back", { level });
      }
    },
    async abandonProbe(level) {
      await levels.abandonProbe(tenantId, level);
      reads.forget(level);
    },
    isSwitched: (level) => seen.get(level) === true,
    forgetReads: () => reads.forget(),
  };
}
