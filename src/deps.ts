import { causeMessage } from "./core/errors.ts";
import { EndingCalls } from "./gateway/ending-calls.ts";
import { readFileSync } from "node:fs";
import { rootCertificates } from "node:tls";
import { join } from "node:path";
import { createOwners, type Owners } from "./accounts/owners.ts";
import { createPrincipalCache, PRINCIPAL_TTL_MS, type PrincipalCache } from "./accounts/principal.ts";
import { createOperationLog, type OperationLog } from "./admin/oplog/writer.ts";
import { createAccountsService, type AccountsService } from "./accounts/service.ts";
import type { ServeConfig } from "./config.ts";
import { createClock, type Clock } from "./core/clock.ts";
import { createLogger, type Logger } from "./core/log.ts";
import { createAuthenticator, type Authenticator } from "./http/auth.ts";
import { createBalanceLoader } from "./metering/credit.ts";
import { createMeter } from "./metering/meter.ts";
import { takeUpRecoveredUsage } from "./metering/recovered-usage.ts";
import { createWrittenCharges } from "./metering/written-charges.ts";
import { createPeriodCounters, createPeriodSeeder } from "./metering/quotas.ts";
import { createMemoryState } from "./state/memory.ts";
import type { State } from "./state/state.ts";
import { createSoftLimitNotifier } from "./mail/soft-limit.ts";
import { createAccountChains } from "./accounts/chain.ts";
import { createAddressGuard, type AddressGuard, type Resolve } from "./upstreams/address-policy.ts";
import { createLocalBus, type InvalidationBus } from "./core/invalidation.ts";
import { createRetiredCreditSweeper } from "./accounts/retired-credit.ts";
import { createUsageRecorder, type UsageRecorder } from "./metering/usage-recorder.ts";
import type { Sealer } from "./store/crypto.ts";
import { holdServingLock } from "./store/serving-lock.ts";
import { sealedValuesIn } from "./store/sqlite/sealed-probe.ts";
import { openServeStore } from "./store/open.ts";
import { pingDatabase, withStartupLock } from "./store/postgres/index.ts";
import { claimDatabase } from "./claim-database.ts";
import { assertSealingKey, loadSealer } from "./store/sealing-check.ts";
import { connectRedis } from "./state/redis/connection.ts";
import { createRedisState, DEFAULT_LEASE_MS } from "./state/redis/state.ts";
import { createRedisBus } from "./state/redis/bus.ts";
import { refuseOtherGenerations } from "./state/redis/versions.ts";
import { createRedisUsageBuffer } from "./state/redis/usage-buffer.ts";
import { warnOfDurability } from "./state/redis/durability.ts";
import { openUsageSpool, USAGE_SPOOL_FILE } from "./metering/usage-spool.ts";
import { WritesUnderWay } from "./metering/charge-writes.ts";
import type { Lifecycle } from "./health/routes.ts";
import { createDependencyMonitor, type DependencyMonitor } from "./health/dependencies.ts";
import { databasePath } from "./store/data-dir.ts";
import type { AccountRow, Store } from "./store/store.ts";
import { createAdapters, type Adapters } from "./upstreams/index.ts";
import { runtimeTrusts } from "./upstreams/trust.ts";
import { createAffinity, type Affinity } from "./gateway/affinity.ts";
import { createTenants, tenantIdOf, type Tenant, type Tenants } from "./tenancy/tenants.ts";
import { sealClearPartialKeys } from "./admin/provider-keys/repository.ts";
import { createRouterMetrics, type RouterMetrics } from "./metrics/router-metrics.ts";
import { registerStateGauges } from "./metrics/state-gauges.ts";

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
  /** Whether PostgreSQL and Redis answer (embedded when not in use): /healthz, /readyz, /metrics. */
  readonly dependencies: DependencyMonitor;
  /** Set once a graceful stop begins (/readyz then answers 503). */
  readonly lifecycle: Lifecycle;
  /**
   * Runs start-up work (creating the first owner) while no other instance on the same
   * database runs its own, so instances started together create one owner.
   */
  exclusively<T>(body: () => Promise<T>): Promise<T>;
  /** Work to finish before the store closes (e.g. flushing batched usage rows). */
  readonly beforeClose: Array<() => void | Promise<void>>;
  /** Streams still read for their usage (gateway/ending-calls.ts). */
  readonly endingCalls: EndingCalls;
}

/** How long a key choice may reuse a read of the shared State (docs/architecture.md, "State on Redis"). */
const SHARED_STATE_READ_MS = 100;

export interface DepsOverrides {
  clock?: Clock;
  log?: Logger;
  /** How upstream host names are resolved for the address policy (tests). */
  resolve?: Resolve;
}

/**
 * Builds every long-lived object. With `config.database` the store is PostgreSQL (this
 * instance alone on it unless `config.redis` is given too), with `config.redis` the
 * State and the invalidation bus are shared through Redis; without them, the SQLite
 * file and memory.
 */
export async function buildDeps(config: ServeConfig, overrides: DepsOverrides = {}): Promise<Deps> {
  const clock = overrides.clock ?? createClock(config.timeZone);
  const log = overrides.log ?? createLogger(config.logLevel, undefined, config.logFormat);
  const sealing = loadSealer(config);
  const { sealer } = sealing;
  // Before the database is migrated: beside instances of another generation this one must not run at all.
  const owner = crypto.randomUUID();
  if (config.redis !== undefined) await refuseOtherGenerations(config.redis, log, { owner, leaseMs: DEFAULT_LEASE_MS });
  // Held before the file is opened: a `router rekey` under way finishes before this instance reads or migrates anything, and none starts while it serves.
  const servingLock = config.database === undefined ? holdServingLock(config.dataDir) : undefined;
  const closing: Array<() => void | Promise<void>> = servingLock ? [servingLock.release] : [];
  const aheadWarning = ({ names, versions }: { names: string[]; versions: string[] }) =>
    log.warn(`the database has migrations of router ${versions.join(", ")} this one does not know; they only add (same generation), so it serves: upgrade this instance`, { migrations: names.join(",") });
  const store = await openServeStore(config.database, databasePath(config.dataDir), aheadWarning).catch((error: unknown) => {
    servingLock?.release();
    throw error;
  });
  try {
    if (config.database !== undefined) await claimDatabase(config, store, sealing, closing, log);
    else assertSealingKey(sealedValuesIn(databasePath(config.dataDir)), sealing);
  } catch (error) {
    for (const close of closing) await close();
    store.close();
    throw error;
  }
  // Partial keys stored in clear by routers before this one are sealed now; a failure is no
  // reason not to serve (clear ones are read as they are, and the next start tries again).
  await sealClearPartialKeys(store, sealer).then(
    (sealed) => sealed > 0 && log.info("provider keys' partial keys stored in clear are now sealed", { keys: sealed }),
    (error: unknown) => log.warn("provider keys' partial keys stored in clear could not be sealed; the next start tries again", { error: causeMessage(error) }),
  );
  const chains = createAccountChains((id) => store.accounts.byId(id));
  const onListenerError = (error: unknown, event: { kind: string }) => log.error("a cache could not follow a change", { change: event.kind, error: causeMessage(error) });
  const redisConnection = config.redis !== undefined ? connectRedis(config.redis) : undefined;
  // The bus has connections of its own: its subscriber must not wait behind State scripts.
  const redisBus =
    config.redis !== undefined
      ? createRedisBus({
          connection: connectRedis(config.redis),
          onListenerError,
          onSubscriptionError: (error) => log.warn("the invalidation subscription to Redis failed; retrying", { error: causeMessage(error) }),
          onPublishError: (error, event) => log.warn("other instances could not be told of a change yet; it is sent again until they are", { change: event.kind, error: causeMessage(error) }),
        })
      : undefined;
  const bus: InvalidationBus = redisBus ?? createLocalBus(onListenerError);
  let staleSince = -Infinity;
  const principals = createPrincipalCache(
    (hash) => store.accounts.byKeyHash(hash),
    () => clock.now(),
    (error) => {
      // Once a minute at most while the database is away.
      if (Date.now() - staleSince < PRINCIPAL_TTL_MS) return;
      staleSince = Date.now();
      log.warn("the database could not be read: keys are checked against the accounts cached before", { error: causeMessage(error) });
    },
    // While other instances' invalidations cannot arrive (Redis away), keys are checked against the database.
    () => (redisBus?.listening() ?? true) && dependencies.up("redis"),
  );
  // A CA the runtime already trusts (serve re-launched itself for it) needs no per-call TLS options.
  const upstreamTls =
    config.upstreamCaFile && !runtimeTrusts(config.upstreamCaFile)
      ? { ca: [...rootCertificates, readFileSync(config.upstreamCaFile, "utf8")] }
      : undefined;
  // A balance read waits for this process's usage writes under way (the recorder's, made below).
  const chargeWrites = new WritesUnderWay();
  let zeroWarnedFor = "";
  const seed = createPeriodSeeder(store, {
    clock,
    // The probe's clock is the wall clock; the business period of that instant is compared.
    answeredAt: () => (config.database !== undefined ? dependencies.answeredAt("database") : undefined),
    onAssumedZero: (period) => {
      if (period === zeroWarnedFor) return;
      zeroWarnedFor = period;
      log.warn("a period began while the database is away: its totals are counted from zero", { period });
    },
  });
  const loaders = { seed, balance: createBalanceLoader(store, chargeWrites) };
  const redisState = redisConnection ? createRedisState({ connection: redisConnection, log, owner }, loaders, () => clock.now()) : undefined;
  const state: State = redisState ?? createMemoryState(loaders, () => clock.now());
  const dependencies = createDependencyMonitor({
    ...(config.database !== undefined ? { database: () => pingDatabase(store) } : {}),
    ...(redisConnection ? { redis: () => redisConnection.send("PING", []) } : {}),
  });
  await dependencies.probe();
  // Usage rows wait in Redis: what it may lose or evict is charges, so the operator hears of it now (or once Redis answers).
  const stopDurabilityReads = redisConnection ? warnOfDurability(redisConnection, log) : undefined;
  // Events published elsewhere before this subscription exists are not heard: wait for
  // it a while, but start anyway (serving 503s) when Redis is away; it is retried.
  if (redisBus) await Promise.race([redisBus.ready(), Bun.sleep(5000)]);
  const oplog = createOperationLog({
    store,
    clock,
    // In the BYOK style a change belongs to its author's tenant: the root of its path.
    tenantOf: config.byok ? async (actorId) => tenantIdOf(true, (await store.accounts.byId(actorId))?.path ?? "") : undefined,
  });
  // With Redis, settled rows wait in a Redis list until the database holds them (an outage, a killed instance).
  const endingCalls = new EndingCalls();
  const usageRecorder = createUsageRecorder({
    store,
    clock,
    log,
    buffer: redisState && redisConnection ? createRedisUsageBuffer({ connection: redisConnection, state: redisState, log }) : undefined,
    backlogLimit: config.usageBacklogLimit,
    requestLog: config.requestLogDays !== 0,
    // Without Redis, rows the database does not take wait on disk, not only in memory (on
    // SQLite too: a stop whose last write failed lost them, uncharged).
    spool: openUsageSpool(join(config.dataDir, USAGE_SPOOL_FILE), log, !redisConnection),
    writes: chargeWrites,
  });
  const metrics = createRouterMetrics();
  // Single-tenant owners run their own network; BYOK tenants may not reach it unless allowed.
  const addressGuard = createAddressGuard({ allowPrivate: !config.byok || config.allowPrivateUpstreams === true }, overrides.resolve, () => clock.now());
  const sweepRetiredCredit = createRetiredCreditSweeper({ store, clock });
  /**
   * Bookkeeping the State does after the fact (a charge written, a balance changed) must
   * not become an unhandled rejection when Redis is away: it is logged, and what Redis
   * then misses expires with the holder's lease or is reloaded from the database.
   */
  const inBackground = (what: string, work: Promise<unknown>) =>
    void work.catch((error: unknown) => log.warn(`the State could not note ${what}`, { error: causeMessage(error) }));
  // Charges of rows this instance wrote itself stop counting as unwritten, sent again until Redis takes them.
  const writtenCharges = createWrittenCharges((charged, version) => state.credit.flushed(charged, version), log);
  usageRecorder.onCharged((charged, version) => writtenCharges.announce(charged, version));
  // A refused row's charge stops counting as unwritten (no version: the balance is read again).
  usageRecorder.onSetAside((charges) => writtenCharges.announce(charges));
  await takeUpRecoveredUsage(usageRecorder, state.counts, (error) => log.warn("the State could not note the charges of usage rows left on disk", { error: causeMessage(error) }));
  const periods = createPeriodCounters();
  const softLimit = createSoftLimitNotifier({ store, clock, log, claims: state.claims });
  const tenants = createTenants(config.byok ?? false, {
    store,
    // Actions of the system itself: no operator, in the tenant they happened in.
    onSystemEvent: (tenantId, action, details) => {
      void oplog.write({ tenantId, actorId: null, action, details }).catch((error: unknown) => log.error("a system action could not be logged", { action, error: causeMessage(error) }));
      // Instances that reuse reads of keys' health and Levels' status drop them.
      void bus.publish({ kind: "routing", tenantId }).catch((error: unknown) => log.error("a routing change could not be announced", { action, error: causeMessage(error) }));
    },
    clock,
    log,
    sealer,
    state,
    // On Redis, a read of keys' health and of a Level's status is a script ahead of each
    // call's admission: calls of 100 ms share one (other instances' changes show that late).
    reuseStateReadsMs: config.redis !== undefined ? SHARED_STATE_READ_MS : 0,
    meterFor: (tenantId, settings, mailer) =>
      createMeter({
        clock,
        log,
        prices: () => settings.prices(),
        modelLimits: () => settings.modelLimits(),
        counts: state.counts,
        periods,
        recorder: usageRecorder,
        databaseName: config.database !== undefined ? "PostgreSQL" : "The SQLite database",
        metrics,
        tenantRoot: config.byok ? tenantId : undefined,
        chainOf: (account) => chains.of(account),
        onSpend: (account, spent) =>
          void softLimit
            .check(account, mailer, (month) => state.counts.read(spent, clock.now(), month))
            .catch((error: unknown) => log.error("the soft-limit check failed", { account: account.id, error: causeMessage(error) })),
      }),
  });
  registerStateGauges(metrics, tenants, redisState?.allowances);
  metrics.registry.gauge(
    "router_usage_rows_waiting",
    "Settled calls' usage rows not in the database yet, by where they wait (past the backlog bound, model calls are refused)",
    ["where"],
    () => [
      { labels: { where: "all" }, value: usageRecorder.backlog() },
      { labels: { where: "disk" }, value: usageRecorder.onDisk() },
    ],
  );
  metrics.registry.gauge("router_dependency_up", "1 while a service this instance depends on (database, redis) answers its probe", ["dependency"], () =>
    dependencies.gauges().map(({ dependency, up }) => ({ labels: { dependency }, value: up })),
  );
  // The caches built here follow every change they hear of.
  bus.subscribe((event) => {
    switch (event.kind) {
      case "account":
        principals.invalidateAccount(event.accountId);
        chains.changed(event.accountId);
        redisState?.forgetAllowances(event.accountId);
        return;
      case "credit": // Granted or taken elsewhere: no call here is admitted against a block reserved before.
        return redisState?.forgetAllowances(event.accountId);
      case "keys":
        return tenants.get(event.tenantId).pool.reload();
      case "config":
        // The writer applied it already; another instance reads what was stored.
        return tenants.get(event.tenantId).settings.reload();
      case "routing": {
        const tenant = tenants.get(event.tenantId);
        tenant.pool.forgetReads();
        tenant.switchOver.forgetReads();
        return;
      }
      case "everything":
        principals.clear();
        chains.clear();
        for (const tenant of tenants.all()) tenant.switchOver.forgetReads();
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
      // Every instance ends its blocks of a changed balance (the bus's account event), not only this one.
      onCreditChanged: (ids) => ids.forEach((id) => inBackground("a changed balance", Promise.all([state.credit.invalidate(id), bus.publish({ kind: "credit", accountId: id })]))),
      heldCredit: (id) => state.credit.held(id),
      // Blocks reserved ahead end on the credit event, here and on every other instance.
      releaseCreditBlocks: redisState?.allowances ? (id) => bus.publish({ kind: "credit", accountId: id }) : undefined,
      onDeleted: (id) =>
        inBackground("a deleted account", state.credit.retire(id, () =>
          void sweepRetiredCredit(id)
            .then((heir) => (heir !== undefined ? state.credit.invalidate(heir) : undefined))
            .catch((error: unknown) => log.error("a deleted account's credit could not be handed on", { account: id, error: causeMessage(error) })),
        )),
    }),
    oplog,
    state,
    tenants,
    tenantOf: (account) => tenants.load(tenants.idOf(account)),
    adapters: createAdapters(upstreamTls ? { tls: upstreamTls } : {}, (url) => addressGuard.check(url)),
    addressGuard,
    affinity: createAffinity({ store, clock, bus, onCollision: (object, kind) => log.warn("an upstream object id another account holds was made again: it stays the first account's", { kind, object }) }),
    usageRecorder,
    metrics,
    upstreamTls,
    bus,
    dependencies,
    lifecycle: { stopping: false },
    exclusively: (body) => (config.database !== undefined ? withStartupLock(store, body) : body()),
    endingCalls,
    beforeClose: [
      // Calls and streams cut by the grace period are read on for their usage: their settlement goes before the last usage write.
      async () => {
        if (endingCalls.size === 0) return;
        log.info("stopping: waiting for calls and streams still read for their usage", { calls: endingCalls.size, maxSeconds: config.drainTimeoutMs / 1000 });
        const left = await endingCalls.ended(config.drainTimeoutMs + 1000);
        if (left > 0) log.error("calls and streams still read for their usage at stop are not charged", { calls: left });
      },
      () => usageRecorder.stop(),
      () => writtenCharges.stop(),
      () => dependencies.stop(),
      () => stopDurabilityReads?.(),
      () => redisBus?.close(),
      () => redisState?.close(),
      ...closing,
    ],
  };
  return deps;
}
