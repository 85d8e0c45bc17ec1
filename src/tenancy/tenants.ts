import { createConfigService, type ConfigService } from "../admin/config/service.ts";
import { createProviderKeysRepository, type ProviderKeysRepository } from "../admin/provider-keys/repository.ts";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/log.ts";
import { createMailer, type Mailer } from "../mail/mailer.ts";
import type { State } from "../state/state.ts";
import type { Meter } from "../metering/meter.ts";
import { createKeyPool, type KeyPool } from "../routing/key-pool.ts";
import { createSwitchOver, type SwitchOver } from "../routing/switch-over.ts";
import type { Sealer } from "../store/crypto.ts";
import type { Store } from "../store/db.ts";
import type { AccountRow } from "../store/schema/accounts.ts";

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
}

/** A tenant is named by the root of an account's path (its owner's id); 0 outside the BYOK style. */
export function tenantIdOf(byok: boolean, path: string): number {
  return byok ? Number(path.split("/")[1] ?? 0) : 0;
}

export interface Tenants {
  readonly byok: boolean;
  /** The tenant id an account belongs to: 0, or in the BYOK style its owner's id. */
  idOf(account: Pick<AccountRow, "path">): number;
  get(tenantId: number): Tenant;
  /** Tenants loaded so far. */
  all(): Tenant[];
  /** Re-reads every loaded tenant's settings and keys (another process wrote them). */
  reload(): void;
}

export interface TenantParts {
  store: Store;
  clock: Clock;
  log: Logger;
  sealer: Sealer;
  /** Where switch-over state is kept (with the rest of the counted state). */
  state: State;
  /** Builds the tenant's meter once its settings exist (the meter prices with them). */
  meterFor(tenantId: number, settings: ConfigService, mailer: Mailer): Meter;
}

export function createTenants(byok: boolean, parts: TenantParts): Tenants {
  const tenants = new Map<number, Tenant>();
  const build = (tenantId: number): Tenant => {
    const { store, clock, log, sealer, state } = parts;
    const settings = createConfigService({ store, clock, sealer, tenantId });
    const providerKeys = createProviderKeysRepository({ store, sealer, clock, tenantId });
    const pool = createKeyPool({ repo: providerKeys, clock, log });
    const mailer = createMailer(settings);
    return {
      tenantId,
      settings,
      providerKeys,
      pool,
      switchOver: createSwitchOver(state.levels, tenantId),
      mailer,
      meter: parts.meterFor(tenantId, settings, mailer),
    };
  };
  return {
    byok,
    idOf: (account) => tenantIdOf(byok, account.path),
    get(tenantId) {
      let tenant = tenants.get(tenantId);
      if (!tenant) {
        tenant = build(tenantId);
        tenants.set(tenantId, tenant);
      }
      return tenant;
    },
    all: () => [...tenants.values()],
    reload() {
      for (const tenant of tenants.values()) {
        tenant.settings.reload();
        tenant.pool.reload();
      }
    },
  };
}
