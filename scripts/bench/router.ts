/**
 * The router under test: the compiled dist/router in its own process, configured
 * over its HTTP API with the owner key a fresh data directory gets, the way an
 * operator would set it up: provider keys on several Levels, mappers, switch-over,
 * pricing, system model limits, and one account with limits, credit and Rates whose
 * key the benchmark's calls use. Every stage of the pipeline is on; no limit bites.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startService, type Service } from "./proc.ts";

export const BENCH_MODEL = "bench-model";

export interface RouterOptions {
  name: string;
  /** Command prefix: the binary, or `bun [--cpu-prof …] src/main.ts`. */
  cmd: string[];
  cwd: string;
  dataDir: string;
  logFile: string;
  caFile: string;
  /**
   * How the router is told to trust the bench CA: `flag`, as the README tells a deployment
   * behind a private CA (--upstream-ca-file; serve re-launches once with the runtime trusting
   * it), or `env` (NODE_EXTRA_CA_CERTS), for runs that must not re-launch (the profiler).
   * Default: `flag`, or BENCH_TRUST (`env` compares with builds older than the flag's
   * cheap path, where the flag alone tripled the CPU per call).
   */
  trust?: "flag" | "env";
  extraEnv?: Record<string, string>;
  extraArgs?: string[];
}

export async function startRouter(options: RouterOptions): Promise<Service & { ownerKey: string }> {
  mkdirSync(options.dataDir, { recursive: true });
  const trust = options.trust ?? (process.env.BENCH_TRUST === "env" ? "env" : "flag");
  const service = await startService({
    name: options.name,
    cmd: [
      ...options.cmd, "serve", "--port", "0", "--data", options.dataDir, "--timezone", "UTC", "--grace", "5",
      ...(trust === "flag" ? ["--upstream-ca-file", options.caFile] : []),
      ...(options.extraArgs ?? []),
    ],
    cwd: options.cwd,
    // BUN_CONFIG_MAX_HTTP_REQUESTS is deliberately NOT set here: the router must cope with
    // 1,000 streams on its own.
    env: { PATH: process.env.PATH, HOME: options.cwd, ...(trust === "env" && { NODE_EXTRA_CA_CERTS: options.caFile }), ...options.extraEnv },
    logFile: options.logFile,
    ready: /router listening on (\S+)/,
  });
  const ownerKey = readFileSync(join(options.dataDir, "initial-owner-key"), "utf8").trim();
  return Object.assign(service, { ownerKey });
}

export async function api(base: string, key: string, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path} → ${response.status}: ${text.slice(0, 500)}`);
  return text ? JSON.parse(text) : undefined;
}

/** BENCH_ROUTER_ENV: extra environment for every measured router (experiments' switches, GC logs). */
export const benchRouterEnv = (): Record<string, string> => JSON.parse(process.env.BENCH_ROUTER_ENV ?? "{}");

/** Configures a fresh router for the benchmark; returns the bench account's API key. */
export async function configureRouter(router: { url: string; ownerKey: string }, mockUrl: string): Promise<string> {
  const call = (method: string, path: string, body?: unknown) => api(router.url, router.ownerKey, method, path, body);
  await call("PUT", "/x-config", {
    MODEL_MAPPER: { "gpt-4-turbo*": "gpt-4o", "bench-alias": BENCH_MODEL, "claude-3-*": "claude-sonnet-4", "gemini-pro*": "gemini-2.5-pro" },
    LEVEL_MAPPER: { "bench-*": 2, "gpt-4o*": 1, "claude-*": 3, "gemini-*": 3 },
    SWITCH_OVER: { "2": 1 },
    PRICING: {
      ChatPricing: {
        [BENCH_MODEL]: { InputText: 0.15, OutputText: 0.6, CachedText: 0.075 },
        "bench-*": { InputText: 1, OutputText: 2 },
      },
    },
    MODEL_LIMITS: { "bench-*": { rpm: 100_000_000, tpm: 1_000_000_000_000 } },
  });
  // Three keys on the bench model's Level, one on its backup Level, one elsewhere.
  const keys = [
    { Level: 2, Name: "bench-a" },
    { Level: 2, Name: "bench-b" },
    { Level: 2, Name: "bench-c" },
    { Level: 1, Name: "backup" },
    { Level: 3, Name: "other" },
  ];
  for (const [i, key] of keys.entries()) {
    await call("POST", "/x-keys", { Provider: `${mockUrl}/v1`, SecretKey: `sk-bench-provider-key-${i}-0123456789abcdef`, Status: true, ...key });
  }
  const account = await call("POST", "/x-users", {
    Email: "bench@example.com",
    Name: "bench-user",
    CreditGranted: 1_000_000,
    Rates: 1.25,
    RPM: 100_000_000,
    RPH: 1_000_000_000,
    RPD: 1_000_000_000,
    TPM: 1_000_000_000_000,
    TPH: 1_000_000_000_000,
    TPD: 1_000_000_000_000,
    DailyLimit: 900_000,
    HardLimit: 900_000,
    SoftLimit: 800_000,
    ModelLimits: { "bench-*": { rpm: 100_000_000, tpm: 1_000_000_000_000 } },
    AllowModels: "bench-*,gpt-*,claude-*",
  });
  return account.APIKey as string;
}
