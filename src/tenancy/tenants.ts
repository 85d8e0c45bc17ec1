import { createConfigService, type ConfigService } from "../admin/config/service.ts";
import { createProviderKeysRepository, type ProviderKeysRepository } from "../admin/provider-keys/repository.ts";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/log.ts";
import { createMailer, type Mailer } from "../mail/mailer.ts";
import type { State } from "../state/state.ts";
import type { Meter } from "../metering/meter.ts";
import { createKeyPool, type KeyPool, type SystemEvent } from "../routing/key-pool.ts";
import { createSwitchOver, type SwitchOver } from "../routing/switch-over.ts";
import { rootIdOf } from "../store/account-root.ts";
import type { Sealer } from "../store/crypto.ts";
import type { AccountRow, Store } from "../store/store.ts";

/**
 * What one tenant owns: its provider keys and their pool, its configuration items
 * (mappers, pricing, limits, mail), its switch-over state and its meter. A
 * single-tenant deployment has one tenant, 0; in the BYOK style every owner's account
 * id names a tenant, and nothing of one tenant is reachable from another.
 */
export interface Tenant {
  readonly tenantId: number;
  readonly settings: ConfigService;
  readonly providerKeys: ProviderKeysRepository;
  readonly pool: KeyPool;
  readonly switchOver: SwitchOver;
  readonly mailer: Mailer;
  readonly meter: Meter;
  /** Resolves once its settings and keys are loaded (a tenant serves nothing before). */
  readonly ready: Promise<void>;
}

/** A tenant is named by the root of an account's path (its owner's id); 0 outside the BYOK style. */
export function tenantIdOf(byok: boolean, path: string): number {
  return byok ? rootIdOf(path) : 0;
}

export interface Tenants {
  readonly byok: boolean;
  /** The tenant id an account belongs to: 0, or in the BYOK style its owner's id. */
  idOf(account: Pick<AccountRow, "path">): number;
  /** The tenant, built on first use; its settings and keys may still be loading (see `load`). */
  get(tenantId: number): Tenant;
  /** The tenant once its settings and keys are loaded. */
  load(tenantId: number): Promise<Tenant>;
  /** Tenants built so far. */
  all(): Tenant[];
  /** Re-reads every tenant's settings and keys (another process wrote them). */
  reload(): Promise<void>;
}

export interface TenantParts {
  store: Store;
  clock: Clock;
  log: Logger;
  sealer: Sealer;
  /** Where switch-over state is kept (with the rest of the counted state). */
  state: State;
  /**
   * How long calls choosing keys may share one read of a Level's keys' health and status:
   * 0 where reads cost nothing (the embedded State); on Redis each is a script per call.
   */
  reuseStateReadsMs?: number;
  /** What the system did on its own in a tenant (a key slept or woke, a Level switched), for the operation log. */
  onSystemEvent?: (tenantId: number, ...event: Parameters<SystemEvent>) => void;
  /** Builds the tenant's meter once its settings exist (the meter prices with them). */
  meterFor(tenantId: number, settings: ConfigService, mailer: Mailer): Meter;
}

export function createTenants(byok: boolean, parts: TenantParts): Tenants {
  const tenants = new Map<number, Tenant>();
  const build = (tenantId: number): Tenant => {
    const { store, clock, log, sealer, state } = parts;
    const settings = createConfigService({ store, clock, sealer, tenantId, log });
    const providerKeys = createProviderKeysRepository({ store, sealer, clock, tenantId });
    const onSystemEvent: SystemEvent | undefined = parts.onSystemEvent && ((action, details) => parts.onSystemEvent!(tenantId, action, details));
    const reuseReadMs = parts.reuseStateReadsMs ?? 0;
    const pool = createKeyPool({ repo: providerKeys, clock, log, keys: state.keys, tenantId, onSystemEvent, reuseReadMs });
    const mailer = createMailer(settings);
    const ready = Promise.all([settings.reload(), pool.reload()]).then(() => undefined);
    // Whoever loads the tenant hears of a failure; nobody waiting is not a crash.
    ready.catch(() => {});
    return {
      ready,
      tenantId,
      settings,
      providerKeys,
      pool,
      switchOver: createSwitchOver(state.levels, tenantId, onSystemEvent, { ms: reuseReadMs, now: () => clock.now() }),
      mailer,
      meter: parts.meterFor(tenantId, settings, mailer),
    };
  };
  // Each tenant once loaded, as a promise made once: every request asks for its tenant.
  const loadedOf = new WeakMap<Tenant, Promise<Tenant>>();
  const get = (tenantId: number): Tenant => {
    let tenant = tenants.get(tenantId);
    if (!tenant) {
      tenant = build(tenantId);
      tenants.set(tenantId, tenant);
    }
    return tenant;
  };
  return {
    byok,
    idOf: (account) => tenantIdOf(byok, account.path),
    get,
    load(tenantId) {
      const tenant = get(tenantId);
      let loaded = loadedOf.get(tenant);
      if (!loaded) {
        loaded = tenant.ready.then(
          () => tenant,
          (error: unknown) => {
            // A tenant whose first load failed (the store was unreachable) is built afresh next time.
            if (tenants.get(tenantId) === tenant) tenants.delete(tenantId);
            throw error;
          },
        );
        loadedOf.set(tenant, loaded);
      }
      return loaded;
    },
    all: () => [...tenants.values()],
    async reload() {
      await Promise.all([...tenants.values()].flatMap((tenant) => [tenant.settings.reload(), tenant.pool.reload()]));
    },
  };
}
