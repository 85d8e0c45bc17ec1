/**
 * Which key an attempt goes to: down the routed Level's SWITCH_OVER chain, a key that
 * speaks the client's format before one reached through a translator; or, for a call
 * that continues an upstream object, the one key that holds it.
 */
import { HttpError } from "../core/errors.ts";
import type { Clock } from "../core/clock.ts";
import type { Translator } from "../formats/translate/translator.ts";
import type { PoolKey } from "../routing/pool-key.ts";
import type { HealthRead } from "../routing/key-pool.ts";
import type { LevelStatus } from "../state/state.ts";
import type { Tenant } from "../tenancy/tenants.ts";
import { adapterFor, type Adapters } from "../upstreams/index.ts";
import type { UpstreamCall } from "../upstreams/types.ts";
import type { CallFit } from "./translation.ts";

export interface Attempt {
  key: PoolKey;
  level: number;
  probe: boolean;
  /**
   * What goes upstream: the client's call, or its translation for a key of another
   * format; or the translator's refusal (a parameter that format cannot carry): a 400, nothing sent.
   */
  upstream: UpstreamCall | HttpError;
  /** Set when the key does not speak the client's format. */
  translator?: Translator;
}

/**
 * What the first key choice of a call reads (its Level's status, its keys' health),
 * started while the call's admission runs: on a shared State the reads and the
 * admission then take one round trip's time instead of three.
 */
export interface ReadAhead {
  level: number;
  status?: Promise<LevelStatus>;
  health?: HealthRead;
}

export function readAhead(tenant: Pick<Tenant, "settings" | "pool" | "switchOver">, level: number): ReadAhead {
  return { level, status: tenant.switchOver.readAhead(level, tenant.settings.routing().switchOver), health: tenant.pool.readAhead(level) };
}

export function createKeyChoice(deps: { clock: Clock; adapters: Adapters } & Pick<Tenant, "settings" | "pool" | "switchOver">) {
  const { clock, settings, pool, switchOver } = deps;
  /**
   * Picks the next key: the resolved Level first, then down its SWITCH_OVER chain; on
   * each Level a key speaking the client's format before one that needs a translator.
   * `upstreamOf` is the call a key is sent: the client's own, or its translation.
   */
  const pick = async (
    level: number,
    tried: Set<number>,
    fit: CallFit,
    upstreamOf: (translator: Translator | undefined) => UpstreamCall | HttpError,
    ahead?: ReadAhead,
  ): Promise<Attempt | undefined> => {
    const backups = settings.routing().switchOver;
    const early = ahead?.level === level ? ahead : undefined;
    const resolved = await switchOver.resolve(level, backups, clock.now(), early?.status);
    const seen = new Set<number>();
    /**
     * The first key whose adapter said why it cannot serve the call (Vertex and Gemini
     * embeddings): held, and answered with that reason (a 400, nothing sent) only when no
     * other key takes the call, so the client learns why instead of "try again later".
     */
    let refused: Attempt | undefined;
    for (let current: number | undefined = resolved.level; current !== undefined && !seen.has(current); current = backups.get(current)) {
      seen.add(current);
      for (let first = current === level; ; first = false) {
        const key = await pool.acquire(current, tried, fit.rank, first ? early?.health : undefined);
        if (!key) break;
        const translator = fit.translatorFor(key.formats);
        const upstream = upstreamOf(translator);
        const probe = resolved.probe && current === resolved.level;
        const adapter = adapterFor(deps.adapters, key);
        if (upstream instanceof HttpError || adapter.supports(upstream)) {
          if (refused) await pool.release(refused.key);
          return { key, level: current, probe, upstream, translator };
        }
        tried.add(key.id);
        const why = refused ? undefined : adapter.refusal?.(upstream);
        // Not a probe: the Level's probe is given up below, as for any key passed over.
        if (why) refused = { key, level: current, probe: false, upstream: new HttpError("invalid_request", why, { code: "unsupported_call" }) };
        else await pool.release(key);
      }
      if (resolved.probe && current === resolved.level) await switchOver.abandonProbe(current);
    }
    return refused;
  };

  /** The one key an object is bound to; never another, even when it fails. Objects are never translated. */
  const pinned = async (keyId: number, tried: Set<number>, upstream: UpstreamCall): Promise<Attempt | undefined> => {
    if (tried.has(keyId)) return undefined;
    const key = await pool.acquireById(keyId);
    return key ? { key, level: key.level, probe: false, upstream } : undefined;
  };

  return { pick, pinned };
}
