import { readFileSync } from "node:fs";
import { rootCertificates } from "node:tls";
import { join } from "node:path";
import { createAccountsRepository, type AccountsRepository } from "./accounts/repository.ts";
import { createPrincipalCache, type PrincipalCache } from "./accounts/principal.ts";
import { createConfigService, type ConfigService } from "./admin/config/service.ts";
import { createOperationLog, type OperationLog } from "./admin/oplog/writer.ts";
import { createAccountsService, type AccountsService } from "./accounts/service.ts";
import { createProviderKeysRepository, type ProviderKeysRepository } from "./admin/provider-keys/repository.ts";
import type { ServeConfig } from "./config.ts";
import { createClock, type Clock } from "./core/clock.ts";
import { createLogger, type Logger } from "./core/log.ts";
import { createAuthenticator, type Authenticator } from "./http/auth.ts";
import { createMemoryCounters, type Counters } from "./metering/counters.ts";
import { createCreditBook, type CreditBook } from "./metering/credit.ts";
import { createMeter, type Meter } from "./metering/meter.ts";
import { createQuotas, type Quotas } from "./metering/quotas.ts";
import { createMailer, type Mailer } from "./mail/mailer.ts";
import { createSoftLimitNotifier } from "./mail/soft-limit.ts";
import { createUsageRecorder, type UsageRecorder, type UsageSink } from "./metering/usage-recorder.ts";
import { createKeyPool, type KeyPool } from "./routing/key-pool.ts";
import { createSwitchOver, type SwitchOver } from "./routing/switch-over.ts";
import { createSealer, loadOrCreateSecretKey, type Sealer } from "./store/crypto.ts";
import { openStore, type Store } from "./store/db.ts";
import { createAdapters, type Adapters } from "./upstreams/index.ts";
import { createAffinity, type Affinity } from "./gateway/affinity.ts";
import { createRouterMetrics, type RouterMetrics } from "./metrics/router-metrics.ts";

/** The single wiring point: every long-lived object of the process, built once from the config. */
export interface Deps {
  readonly config: ServeConfig;
  readonly clock: Clock;
  readonly log: Logger;
  readonly store: Store;
  readonly sealer: Sealer;
  readonly accounts: AccountsRepository;
  readonly principals: PrincipalCache;
  readonly auth: Authenticator;
  /** Account management: hierarchy, credit ledger, key rotation. */
  readonly accountsService: AccountsService;
  readonly oplog: OperationLog;
  /** System configuration items (spec 2.4), in memory. */
  readonly settings: ConfigService;
  readonly providerKeys: ProviderKeysRepository;
  readonly pool: KeyPool;
  readonly counters: Counters;
  readonly switchOver: SwitchOver;
  readonly adapters: Adapters;
  /** Which account and provider key each upstream object created through the router belongs to. */
  readonly affinity: Affinity;
  /** Where completed calls are reported: the meter, which charges them and hands them to the recorder. */
  readonly usage: UsageSink;
  readonly usageRecorder: UsageRecorder;
  readonly meter: Meter;
  readonly credit: CreditBook;
  readonly quotas: Quotas;
  readonly mailer: Mailer;
  /** TLS options for upstream fetches: the public roots plus --upstream-ca-file. */
  readonly upstreamTls: { ca: string[] } | undefined;
  readonly metrics: RouterMetrics;
  /** Drops every in-memory cache; called when another process changed the database. */
  invalidateCaches(): void;
  /** Work to finish before the store closes (e.g. flushing batched usage rows). */
  readonly beforeClose: Array<() => void | Promise<void>>;
}

export interface DepsOverrides {
  clock?: Clock;
  log?: Logger;
}

export function databasePath(dataDir: string): string {
  return join(dataDir, "router.db");
}

export function buildDeps(config: ServeConfig, overrides: DepsOverrides = {}): Deps {
  const clock = overrides.clock ?? createClock(config.timeZone);
  const log = overrides.log ?? createLogger(config.logLevel);
  const sealer = createSealer(loadOrCreateSecretKey(config.secretKeyFile ?? join(config.dataDir, "secret.key")));
  const store = openStore(databasePath(config.dataDir));
  const accounts = createAccountsRepository({ store, clock });
  const principals = createPrincipalCache((hash) => accounts.findLiveByKeyHash(hash));
  const upstreamTls = config.upstreamCaFile
    ? { ca: [...rootCertificates, readFileSync(config.upstreamCaFile, "utf8")] }
    : undefined;
  const settings = createConfigService({ store, clock, sealer });
  const providerKeys = createProviderKeysRepository({ store, sealer, clock });
  const pool = createKeyPool({ repo: providerKeys, clock, log });
  const counters = createMemoryCounters();
  const oplog = createOperationLog({ store, clock });
  const usageRecorder = createUsageRecorder({ store, clock, log });
  const metrics = createRouterMetrics();
  const credit = createCreditBook({ store, clock });
  usageRecorder.onCharged((charged) => credit.flushed(charged));
  const quotas = createQuotas({ store, counters });
  const mailer = createMailer(settings);
  const softLimit = createSoftLimitNotifier({ store, clock, log, quotas, mailer });
  const meter = createMeter({
    clock,
    log,
    prices: () => settings.prices(),
    modelLimits: () => settings.modelLimits(),
    credit,
    counters,
    quotas,
    recorder: usageRecorder,
    metrics,
    onSpend: (account) => softLimit.check(account),
  });
  const switchOver = createSwitchOver(counters);
  registerStateGauges(metrics, pool, switchOver, settings);
  return {
    config,
    clock,
    log,
    store,
    sealer,
    accounts,
    principals,
    auth: createAuthenticator(principals),
    accountsService: createAccountsService({
      store,
      clock,
      principals,
      oplog,
      onCreditChanged: (ids) => ids.forEach((id) => credit.invalidate(id)),
    }),
    oplog,
    settings,
    providerKeys,
    pool,
    counters,
    switchOver,
    adapters: createAdapters(upstreamTls ? { tls: upstreamTls } : {}),
    affinity: createAffinity({ store, clock }),
    usage: meter,
    usageRecorder,
    meter,
    credit,
    quotas,
    mailer,
    metrics,
    upstreamTls,
    invalidateCaches() {
      principals.clear();
      settings.reload();
      pool.reload();
    },
    beforeClose: [() => usageRecorder.stop()],
  };
}

/** Gauges read at scrape time from the pool and the switch-over state. */
function registerStateGauges(metrics: RouterMetrics, pool: KeyPool, switchOver: SwitchOver, settings: ConfigService): void {
  metrics.registry.gauge("router_provider_keys", "Provider keys by state (enabled, sleeping with its reason, disabled)", ["state"], () => {
    const counts = new Map<string, number>();
    for (const key of pool.all()) {
      const state = !key.status ? "disabled" : key.sleeping ? `sleeping_${key.sleepReason ?? "manual"}` : "enabled";
      counts.set(state, (counts.get(state) ?? 0) + 1);
    }
    return [...counts].map(([state, value]) => ({ labels: { state }, value }));
  });
  metrics.registry.gauge("router_level_switched", "1 while a Level's traffic goes to its SWITCH_OVER backup", ["level"], () =>
    [...settings.routing().switchOver.keys()].map((level) => ({ labels: { level: String(level) }, value: switchOver.isSwitched(level) ? 1 : 0 })),
  );
  metrics.registry.gauge("router_streams_active", "Streams being relayed now", [], () => [{ labels: {}, value: metrics.activeStreams() }]);
}
