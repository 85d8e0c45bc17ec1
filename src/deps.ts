import { readFileSync } from "node:fs";
import { rootCertificates } from "node:tls";
import { join } from "node:path";
import { createOwners, type Owners } from "./accounts/owners.ts";
import { createPrincipalCache, type PrincipalCache } from "./accounts/principal.ts";
import { createOperationLog, type OperationLog } from "./admin/oplog/writer.ts";
import { createAccountsService, type AccountsService } from "./accounts/service.ts";
import type { ServeConfig } from "./config.ts";
import { createClock, type Clock } from "./core/clock.ts";
import { createLogger, type Logger } from "./core/log.ts";
import { createAuthenticator, type Authenticator } from "./http/auth.ts";
import { createBalanceLoader } from "./metering/credit.ts";
import { createMeter } from "./metering/meter.ts";
import { createPeriodCounters, createPeriodSeeder } from "./metering/quotas.ts";
import { createMemoryState } from "./state/memory.ts";
import type { State } from "./state/state.ts";
import { createSoftLimitNotifier } from "./mail/soft-limit.ts";
import { createAccountChains } from "./accounts/chain.ts";
import { createAddressGuard, type AddressGuard, type Resolve } from "./upstreams/address-policy.ts";
import { createLocalBus, type InvalidationBus } from "./core/invalidation.ts";
import { createRetiredCreditSweeper } from "./accounts/retired-credit.ts";
import { createUsageRecorder, type UsageRecorder, type UsageSink } from "./metering/usage-recorder.ts";
import { createSealer, loadOrCreateSecretKey, type Sealer } from "./store/crypto.ts";
import { openStore } from "./store/open.ts";
import { databasePath } from "./store/data-dir.ts";
import type { AccountRow, Store } from "./store/store.ts";
import { createAdapters, type Adapters } from "./upstreams/index.ts";
import { createAffinity, type Affinity } from "./gateway/affinity.ts";
import { createTenants, tenantIdOf, type Tenant, type Tenants } from "./tenancy/tenants.ts";
import { createRouterMetrics, type RouterMetrics } from "./metrics/router-metrics.ts";

/** The single wiring point: every long-lived object of the process, built once from the config. */
export interface Deps {
  readonly config: ServeConfig;
  readonly clock: Clock;
  readonly log: Logger;
  readonly store: Store;
  readonly sealer: Sealer;
  /** Creates owner accounts (the initial owner, BYOK sign-ups). */
  readonly owners: Owners;
  readonly principals: PrincipalCache;
  readonly auth: Authenticator;
  /** Account management: hierarchy, credit ledger, key rotation. */
  readonly accountsService: AccountsService;
  readonly oplog: OperationLog;
  /** Everything counted: limits, spend, credit in flight, switch-over, sign-ups (docs/architecture.md, "State"). */
  readonly state: State;
  readonly adapters: Adapters;
  /** Per-tenant state: provider keys, configuration, switch-over, meter (one tenant unless --byok). */
  readonly tenants: Tenants;
  /** The tenant an account belongs to, once its settings and keys are loaded. */
  tenantOf(account: Pick<AccountRow, "path">): Promise<Tenant>;
  /** Which account and provider key each upstream object created through the router belongs to. */
  readonly affinity: Affinity;
  readonly usageRecorder: UsageRecorder;
  /** TLS options for upstream fetches: the public roots plus --upstream-ca-file. */
  readonly upstreamTls: { ca: string[] } | undefined;
  /** Where provider secrets may be sent: checked when a URL is saved and before each upstream connection. */
  readonly addressGuard: AddressGuard;
  readonly metrics: RouterMetrics;
  /** Tells caches and live sessions what a write changed (docs/architecture.md, "Seams"). */
  readonly bus: InvalidationBus;
  /** Work to finish before the store closes (e.g. flushing batched usage rows). */
  readonly beforeClose: Array<() => void | Promise<void>>;
}

export interface DepsOverrides {
  clock?: Clock;
  log?: Logger;
  /** How upstream host names are resolved for the address policy (tests). */
  resolve?: Resolve;
}

export function buildDeps(config: ServeConfig, overrides: DepsOverrides = {}): Deps {
  const clock = overrides.clock ?? createClock(config.timeZone);
  const log = overrides.log ?? createLogger(config.logLevel);
  const sealer = createSealer(loadOrCreateSecretKey(config.secretKeyFile ?? join(config.dataDir, "secret.key")));
  const store = openStore(databasePath(config.dataDir));
  const chains = createAccountChains((id) => store.accounts.byId(id));
  const bus = createLocalBus((error, event) => log.error("a cache could not follow a change", { change: event.kind, error: (error as Error).message }));
  const principals = createPrincipalCache((hash) => store.accounts.byKeyHash(hash), () => clock.now());
  const upstreamTls = config.upstreamCaFile
    ? { ca: [...rootCertificates, readFileSync(config.upstreamCaFile, "utf8")] }
    : undefined;
  const state = createMemoryState({ seed: createPeriodSeeder(store), balance: createBalanceLoader(store) }, () => clock.now());
  const oplog = createOperationLog({
    store,
    clock,
    // In the BYOK style a change belongs to its author's tenant: the root of its path.
    tenantOf: config.byok ? async (actorId) => tenantIdOf(true, (await store.accounts.byId(actorId))?.path ?? "") : undefined,
  });
  const usageRecorder = createUsageRecorder({ store, clock, log });
  const metrics = createRouterMetrics();
  // Single-tenant owners run their own network; BYOK tenants may not reach it unless allowed.
  const addressGuard = createAddressGuard({ allowPrivate: !config.byok || config.allowPrivateUpstreams === true }, overrides.resolve, () => clock.now());
  const sweepRetiredCredit = createRetiredCreditSweeper({ store, clock });
  usageRecorder.onCharged((charged) => void state.credit.flushed(charged));
  const periods = createPeriodCounters();
  const softLimit = createSoftLimitNotifier({ store, clock, log, claims: state.claims });
  const tenants = createTenants(config.byok ?? false, {
    store,
    clock,
    log,
    sealer,
    state,
    meterFor: (tenantId, settings, mailer) =>
      createMeter({
        clock,
        log,
        prices: () => settings.prices(),
        modelLimits: () => settings.modelLimits(),
        counts: state.counts,
        periods,
        recorder: usageRecorder,
        metrics,
        tenantRoot: config.byok ? tenantId : undefined,
        chainOf: (account) => chains.of(account),
        onSpend: (account, spent) =>
          void softLimit
            .check(account, mailer, (month) => state.counts.read(spent, clock.now(), month))
            .catch((error: unknown) => log.error("the soft-limit check failed", { account: account.id, error: (error as Error).message })),
      }),
  });
  registerStateGauges(metrics, tenants);
  // The caches built here follow every change they hear of.
  bus.subscribe((event) => {
    switch (event.kind) {
      case "account":
        principals.invalidateAccount(event.accountId);
        chains.clear();
        return;
      case "keys":
        return tenants.get(event.tenantId).pool.reload();
      case "config":
        return;
      case "everything":
        principals.clear();
        chains.clear();
        return tenants.reload();
    }
  });
  const deps: Deps = {
    config,
    clock,
    log,
    store,
    sealer,
    owners: createOwners({ store, clock }),
    principals,
    auth: createAuthenticator(principals),
    accountsService: createAccountsService({
      store,
      clock,
      bus,
      oplog,
      onCreditChanged: (ids) => ids.forEach((id) => void state.credit.invalidate(id)),
      heldCredit: (id) => state.credit.held(id),
      onDeleted: (id) =>
        void state.credit.retire(id, () =>
          void sweepRetiredCredit(id)
            .then((heir) => (heir !== undefined ? state.credit.invalidate(heir) : undefined))
            .catch((error: unknown) => log.error("a deleted account's credit could not be handed on", { account: id, error: (error as Error).message })),
        ),
    }),
    oplog,
    state,
    tenants,
    tenantOf: (account) => tenants.load(tenants.idOf(account)),
    adapters: createAdapters(upstreamTls ? { tls: upstreamTls } : {}, (url) => addressGuard.check(url)),
    addressGuard,
    affinity: createAffinity({ store, clock }),
    usageRecorder,
    metrics,
    upstreamTls,
    bus,
    beforeClose: [() => usageRecorder.stop()],
  };
  return deps;
}

/** Gauges read at scrape time from every tenant's pool and switch-over state. */
function registerStateGauges(metrics: RouterMetrics, tenants: Tenants): void {
  metrics.registry.gauge("router_provider_keys", "Provider keys by state (enabled, sleeping with its reason, disabled)", ["state"], () => {
    const counts = new Map<string, number>();
    for (const tenant of tenants.all()) {
      for (const key of tenant.pool.all()) {
        const state = !key.status ? "disabled" : key.sleeping ? `sleeping_${key.sleepReason ?? "manual"}` : "enabled";
        counts.set(state, (counts.get(state) ?? 0) + 1);
      }
    }
    return [...counts].map(([state, value]) => ({ labels: { state }, value }));
  });
  metrics.registry.gauge("router_level_switched", "1 while a Level's traffic goes to its SWITCH_OVER backup", ["level"], () =>
    tenants.all().flatMap((tenant) =>
      [...tenant.settings.routing().switchOver.keys()].map((level) => ({ labels: { level: String(level) }, value: tenant.switchOver.isSwitched(level) ? 1 : 0 })),
    ),
  );
  metrics.registry.gauge("router_streams_active", "Streams being relayed now", [], () => [{ labels: {}, value: metrics.activeStreams() }]);
}
