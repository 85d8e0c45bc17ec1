import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "./temp-dir.ts";
import { ensureInitialOwner } from "../../src/accounts/bootstrap.ts";
import { DEFAULT_MAX_BODY, UPSTREAM_DEFAULTS, type ServeConfig } from "../../src/config.ts";
import type { Clock } from "../../src/core/clock.ts";
import { createLogger } from "../../src/core/log.ts";
import { buildDeps, type Deps } from "../../src/deps.ts";
import type { Tenant } from "../../src/tenancy/tenants.ts";
import { startServer, type RunningServer } from "../../src/server.ts";
import { testCertificates } from "./tls.ts";

export interface TestRouter {
  /** e.g. `http://127.0.0.1:41234` */
  readonly url: string;
  /** API key of the owner created on first start. */
  readonly ownerKey: string;
  /** The dependencies as the first owner's tenant sees them (the only tenant unless --byok). */
  /** The process's dependencies with the owner's tenant (its settings, keys, pool, meter) spread in. */
  readonly deps: Deps & Tenant;
  readonly server: RunningServer;
  readonly dataDir: string;
  /** Every log line the router wrote, for assertions (e.g. that no secret leaks). */
  readonly logs: string[];
  /** fetch against the router, with the owner key unless `key` says otherwise (null: no key). */
  fetch(path: string, init?: RequestInit & { key?: string | null }): Promise<Response>;
  stop(): Promise<void>;
}

export interface StartOptions {
  config?: Partial<ServeConfig>;
  clock?: Clock;
  /** Reuse a data directory (e.g. to restart on the same state). */
  dataDir?: string;
  /**
   * PRICING to start with. By default every model is priced at zero, so tests about
   * routing can use any model name; `false` keeps the built-in catalog only (unpriced
   * models refused), as a real deployment starts.
   */
  pricing?: Record<string, unknown> | false;
  /** How upstream host names resolve for the address policy (default: the system resolver). */
  resolve?: (host: string) => Promise<string[]>;
}

/** Prices every model at zero: for tests that are not about metering. */
export const FREE_PRICING = { ChatPricing: { "*": { InputText: 0, OutputText: 0 } } };

export { tempDir };

/** Starts the router in this process on port 0 with a temp data dir, trusting the test CA for upstreams. */
export async function startRouter(options: StartOptions = {}): Promise<TestRouter> {
  const dataDir = options.dataDir ?? tempDir();
  const config: ServeConfig = {
    host: "127.0.0.1",
    port: 0,
    dataDir,
    timeZone: "UTC",
    maxBody: DEFAULT_MAX_BODY,
    trustProxy: false,
    upstreamCaFile: testCertificates().caFile,
    logLevel: "debug",
    ownerEmail: "owner@localhost",
    graceSeconds: 5,
    ...UPSTREAM_DEFAULTS,
    ...options.config,
  };
  const logs: string[] = [];
  const global = await buildDeps(config, { clock: options.clock, log: createLogger(config.logLevel, (line) => logs.push(line)), resolve: options.resolve });
  await global.exclusively(() => ensureInitialOwner(global.store, global.owners, dataDir, config.ownerEmail));
  const deps: Deps & Tenant = { ...global, ...(await global.tenantOf((await global.store.accounts.byId(1))!)) };
  const pricing = options.pricing === undefined ? FREE_PRICING : options.pricing;
  if (pricing && !options.dataDir) await deps.settings.update({ PRICING: pricing });
  const ownerKey = readFileSync(join(dataDir, "initial-owner-key"), "utf8").trim();
  const server = startServer(deps);
  return {
    url: server.url,
    ownerKey,
    deps,
    server,
    dataDir,
    logs,
    fetch(path, init = {}) {
      const { key, ...rest } = init;
      const headers = new Headers(rest.headers);
      const useKey = key === undefined ? ownerKey : key;
      if (useKey !== null && !headers.has("authorization")) headers.set("authorization", `Bearer ${useKey}`);
      return fetch(server.url + path, { ...rest, headers });
    },
    async stop() {
      // No drain pause: no load balancer watches a test router (the shutdown tests ask for one).
      await server.stop(1, 0);
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Polls `condition` until it holds (or throws after `timeoutMs`): tests wait on conditions, never on sleeps. */
export async function waitFor<T>(condition: () => T | Promise<T>, timeoutMs = 5000, what = "condition"): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(10);
  }
}
