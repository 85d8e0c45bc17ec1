import type { ConfigService } from "../../admin/config/service.ts";
import type { Clock } from "../../core/clock.ts";
import type { KeyPool } from "../../routing/key-pool.ts";
import type { PoolKey } from "../../routing/pool-key.ts";
import type { SwitchOver } from "../../routing/switch-over.ts";
import { supportsRealtime } from "./upstream.ts";

/** A key chosen for a realtime session, held (in flight) until the session ends. */
export interface PickedKey {
  key: PoolKey;
  level: number;
  /** True when this session is the switched-over primary's single probe. */
  probe: boolean;
}

/**
 * Like the relay's pick: the Level the model routes to, then down its SWITCH_OVER
 * chain, skipping keys already tried and keys whose provider type has no realtime
 * endpoint.
 */
export async function pickRealtimeKey(
  deps: { settings: ConfigService; switchOver: SwitchOver; pool: KeyPool },
  clock: Clock,
  level: number,
  tried: Set<number>,
): Promise<PickedKey | undefined> {
  const backups = deps.settings.routing().switchOver;
  const resolved = await deps.switchOver.resolve(level, backups, clock.now());
  const seen = new Set<number>();
  for (let current: number | undefined = resolved.level; current !== undefined && !seen.has(current); current = backups.get(current)) {
    seen.add(current);
    for (;;) {
      const key = await deps.pool.acquire(current, tried);
      if (!key) break;
      if (supportsRealtime(key)) return { key, level: current, probe: resolved.probe && current === resolved.level };
      await deps.pool.release(key);
      tried.add(key.id);
    }
    if (resolved.probe && current === resolved.level) await deps.switchOver.abandonProbe(current);
  }
  return undefined;
}
