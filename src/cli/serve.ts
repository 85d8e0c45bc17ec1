import { defineCommand, type ArgsDef } from "citty";
import { ensureInitialOwner } from "../accounts/bootstrap.ts";
import { DEFAULT_MAX_BODY, UPSTREAM_DEFAULTS, type ServeConfig } from "../config.ts";
import { assertTimeZone, systemTimeZone } from "../core/clock.ts";
import { createLogger, LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from "../core/log.ts";
import { buildDeps } from "../deps.ts";
import { assertCanListen, startServer } from "../server.ts";
import { clearSpool, prepareDataDir, writingDataDir } from "../store/data-dir.ts";
import { shownUrl } from "../store/postgres/url.ts";
import { dataArgs } from "./common-args.ts";
import { databaseUrl, passwordFlagWarning } from "./database-flag.ts";
import { flagOrEnv, optionName, parseBooleanFlag, parseIntegerFlag, rejectEmptyValues, rejectStrayArguments, rejectUnknownFlags, UsageError } from "./flags.ts";
import { certificateFile, checkKeyPair, privateKeyFile } from "./pem-files.ts";
import { runOrExit } from "./run.ts";
import { isValidEmail } from "../accounts/validation.ts";
import { DEFAULT_REQUEST_LOG_DAYS, startRequestLogPruner } from "../metering/request-log-retention.ts";
import { DEFAULT_CORS_ORIGINS, parseCorsOrigins, type CorsOrigins } from "../http/cors.ts";

export const serveArgs = {
  host: { type: "string", description: "Address to listen on (env ROUTER_HOST; default 127.0.0.1)", valueHint: "addr" },
  port: { type: "string", description: "Port; 0 picks a free one (env ROUTER_PORT; default 8080)", valueHint: "n" },
  ...dataArgs,
  "fallback-secret-key-file": {
    type: "string",
    description: "Another key file sealed values are also opened with, never sealed with: for rotating the sealing key (env ROUTER_FALLBACK_SECRET_KEY_FILE)",
    valueHint: "file",
  },
  database: {
    type: "string",
    description: "PostgreSQL URL, postgres://user@host/db?sslmode=require: run on PostgreSQL instead of the SQLite file (env ROUTER_DATABASE; prefer the env form)",
    valueHint: "url",
  },
  redis: {
    type: "string",
    description: "Redis URL, redis:// or rediss://: limits, credit and invalidation shared by every instance; needs --database (env ROUTER_REDIS; prefer the env form)",
    valueHint: "url",
  },
  "base-url": {
    type: "string",
    description: "Public URL of this router; upstreams pointing at it are refused (env ROUTER_BASE_URL)",
    valueHint: "url",
  },
  timezone: {
    type: "string",
    description: "IANA time zone of the business date (env ROUTER_TIMEZONE; default the system zone)",
    valueHint: "zone",
  },
  "max-body": {
    type: "string",
    description: `Largest request body in bytes, else 413 (env ROUTER_MAX_BODY; default ${DEFAULT_MAX_BODY})`,
    valueHint: "bytes",
  },
  "trust-proxy": {
    type: "boolean",
    description: "Take the client IP from the last X-Forwarded-For entry (env ROUTER_TRUST_PROXY)",
  },
  "cors-origins": {
    type: "string",
    description: "Browser pages that may call the router: *, off, or origins separated by commas, https://chat.example.com (env ROUTER_CORS_ORIGINS; default *)",
    valueHint: "origins",
  },
  "tls-cert": { type: "string", description: "PEM certificate: serve HTTPS and WSS (env ROUTER_TLS_CERT)", valueHint: "file" },
  "tls-key": { type: "string", description: "PEM private key for --tls-cert (env ROUTER_TLS_KEY)", valueHint: "file" },
  "upstream-ca-file": {
    type: "string",
    description: "Extra CA certificates (PEM) trusted for upstreams, added to the public roots (env ROUTER_UPSTREAM_CA_FILE)",
    valueHint: "file",
  },
  "log-level": {
    type: "string",
    description: `One of ${LOG_LEVELS.join(", ")} (env ROUTER_LOG_LEVEL; default info)`,
    valueHint: "level",
  },
  "log-format": {
    type: "string",
    description: "logfmt (one key=value line an entry) or json (one JSON object a line, for log collectors) (env ROUTER_LOG_FORMAT; default logfmt)",
    valueHint: "format",
  },
  "owner-email": {
    type: "string",
    description: "Email of the owner created on first start (env ROUTER_OWNER_EMAIL; default owner@localhost)",
    valueHint: "email",
  },
  grace: {
    type: "string",
    description: "Seconds in-flight requests get to finish on SIGTERM/SIGINT (env ROUTER_GRACE; default 30)",
    valueHint: "s",
  },
  "request-log-days": {
    type: "string",
    description: `Days the request log (GET /x-requests) keeps each call; 0 turns it off and empties it (env ROUTER_REQUEST_LOG_DAYS; default ${DEFAULT_REQUEST_LOG_DAYS})`,
    valueHint: "days",
  },
  "max-attempts": {
    type: "string",
    description: `Upstream attempts per call, first try included (env ROUTER_MAX_ATTEMPTS; default ${UPSTREAM_DEFAULTS.maxAttempts})`,
    valueHint: "n",
  },
  "first-byte-timeout": {
    type: "string",
    description: `Seconds to wait for an upstream's response headers and a stream's first chunk, connecting included (env ROUTER_FIRST_BYTE_TIMEOUT; default ${UPSTREAM_DEFAULTS.firstByteTimeoutMs / 1000})`,
    valueHint: "s",
  },
  "stream-idle-timeout": {
    type: "string",
    description: `Seconds of upstream silence inside a stream before it is ended (env ROUTER_STREAM_IDLE_TIMEOUT; default ${UPSTREAM_DEFAULTS.streamIdleTimeoutMs / 1000})`,
    valueHint: "s",
  },
  "drain-timeout": {
    type: "string",
    description: `Seconds a stream's upstream is still read for usage after the client left (env ROUTER_DRAIN_TIMEOUT; default ${UPSTREAM_DEFAULTS.drainTimeoutMs / 1000})`,
    valueHint: "s",
  },
  byok: {
    type: "boolean",
    description: "Multi-tenant BYOK style: every owner runs its own isolated tenant (env ROUTER_BYOK)",
  },
  "allow-private-upstreams": {
    type: "boolean",
    description: "BYOK: let tenants point provider keys at private and loopback addresses (env ROUTER_ALLOW_PRIVATE_UPSTREAMS)",
  },
  signup: {
    type: "boolean",
    description: "BYOK: let owners register themselves through POST /x-signup (env ROUTER_SIGNUP)",
  },
  "signup-smtp": {
    type: "string",
    description: "SMTP URL for sign-up confirmation mail, smtp://user:pass@host:587 (env ROUTER_SIGNUP_SMTP; prefer the env form)",
    valueHint: "url",
  },
  "signup-from": { type: "string", description: "Sender of sign-up confirmation mail (env ROUTER_SIGNUP_FROM)", valueHint: "email" },
  "metrics-token": {
    type: "string",
    description: "Bearer token that may read /metrics besides owner keys (env ROUTER_METRICS_TOKEN; prefer the env form)",
    valueHint: "token",
  },
} as const satisfies ArgsDef;

/**
 * Checks the scale-out URLs: the database's the way every command checks it
 * (database-flag.ts: errors show it with its password masked), Redis's scheme, and that
 * Redis comes with a database. Errors never show a password.
 */
function resolveDependencies(args: Record<string, unknown>, env: NodeJS.ProcessEnv, redis: string | undefined): { database?: string; redis?: string } {
  const flag = typeof args.database === "string" ? args.database : undefined;
  // The flag's password warning is not printed here: serveWarnings reports it with the others.
  const database = databaseUrl(flag, "database", env, () => {});
  if (redis !== undefined) {
    const scheme = schemeOf(redis);
    if (scheme !== "redis:" && scheme !== "rediss:") throw new UsageError(`${optionName(args, "redis", env)} must be a Redis URL, redis://host:6379 or rediss://host:6380`);
    // The State on Redis loads balances and period totals from the shared database: on
    // per-instance SQLite files each instance would see different ones.
    if (database === undefined) {
      throw new UsageError("--redis needs --database: instances sharing Redis must share one PostgreSQL database (--database or ROUTER_DATABASE)");
    }
  }
  return { database, redis };
}

function corsOriginsFlag(name: string, value: string | undefined): CorsOrigins {
  if (value === undefined) return DEFAULT_CORS_ORIGINS;
  try {
    return parseCorsOrigins(value);
  } catch (error) {
    throw new UsageError(`${name}: ${(error as Error).message}`);
  }
}

function schemeOf(url: string): string | undefined {
  try {
    return new URL(url).protocol;
  } catch {
    return undefined;
  }
}

/**
 * What `serve` warns about before it starts: a URL with a password given as a flag
 * (anyone can read it in the process list), and a database without Redis (one instance
 * only). Never quotes a URL.
 */
export function serveWarnings(
  args: Record<string, unknown>,
  config: Pick<ServeConfig, "database" | "redis"> & Partial<Pick<ServeConfig, "signupSmtp" | "signupFrom" | "fallbackSecretKeyFile">>,
): string[] {
  const warnings: string[] = [];
  for (const [flag, env] of [
    ["database", "ROUTER_DATABASE"],
    ["redis", "ROUTER_REDIS"],
    ["signup-smtp", "ROUTER_SIGNUP_SMTP"],
  ] as const) {
    const given = args[flag];
    const warning = passwordFlagWarning(flag, env, typeof given === "string" ? given : undefined);
    if (warning) warnings.push(warning);
  }
  // The token is a secret whole: given as a flag, anyone on the machine reads it in the process list.
  if (typeof args["metrics-token"] === "string" && args["metrics-token"] !== "") {
    warnings.push("--metrics-token is a secret, which other users of this machine can see in the process list; set ROUTER_METRICS_TOKEN instead");
  }
  // Mail from router@localhost is what many servers refuse, or file as spam.
  if (config.signupSmtp !== undefined && config.signupFrom === undefined) {
    warnings.push("--signup-smtp without --signup-from: confirmation mail goes out from router@localhost, which mail servers often refuse (set --signup-from or ROUTER_SIGNUP_FROM)");
  }
  // A rotation left half done keeps the old key useful to whoever holds it.
  if (config.fallbackSecretKeyFile !== undefined) {
    warnings.push("--fallback-secret-key-file is for a rotation of the sealing key under way: once `router rekey` has run, restart without it (README, \"Rotating the sealing key\")");
  }
  if (config.database !== undefined && config.redis === undefined) {
    warnings.push("--database without --redis: limits and credit in flight are kept in this process, so this instance must be the only one on the database (give every instance --redis to run several)");
  }
  return warnings;
}

/**
 * The longest a timeout flag may say, in seconds (about 23 days). A timer past 2^31-1 ms
 * fires at once in Bun (as in Node), so a first-byte timeout of 25 days, meant as "wait
 * as long as it takes", would time every call out at once; the margin covers the second
 * the drain wait adds at a stop.
 */
export const MAX_TIMER_SECONDS = 2_000_000;

/** The longest the request log may keep a call (100 years): a cutoff further back is no date PostgreSQL can compare. */
const MAX_REQUEST_LOG_DAYS = 36_500;

/** Merges flags, ROUTER_* environment variables and defaults into a checked config. */
export function resolveServeConfig(args: Record<string, unknown>, env = process.env): ServeConfig {
  const get = (name: string) => flagOrEnv(args, name, env);
  // `--port` or `ROUTER_PORT` in errors: whichever the value came from.
  const named = (name: string) => optionName(args, name, env);
  const seconds = (name: string, fallbackMs: number) => parseIntegerFlag(named(name), get(name), fallbackMs / 1000, 1, MAX_TIMER_SECONDS) * 1000;
  const timeZone = get("timezone") ?? systemTimeZone();
  try {
    assertTimeZone(timeZone);
  } catch {
    throw new UsageError(`${named("timezone")}: unknown time zone "${timeZone}"`);
  }
  const logLevel = get("log-level") ?? "info";
  if (!LOG_LEVELS.includes(logLevel as LogLevel)) {
    throw new UsageError(`${named("log-level")} must be one of ${LOG_LEVELS.join(", ")}, got "${logLevel}"`);
  }
  const logFormat = get("log-format") ?? "logfmt";
  if (!LOG_FORMATS.includes(logFormat as LogFormat)) {
    throw new UsageError(`${named("log-format")} must be one of ${LOG_FORMATS.join(", ")}, got "${logFormat}"`);
  }
  const port = parseIntegerFlag(named("port"), get("port"), 8080);
  if (port > 65535) throw new UsageError(`${named("port")} must be at most 65535, got ${port}`);
  const byok = parseBooleanFlag(named("byok"), get("byok"));
  const signup = parseBooleanFlag(named("signup"), get("signup"));
  if (signup && !byok) throw new UsageError("--signup needs --byok: only BYOK owners register themselves");
  const baseUrl = get("base-url");
  // Not echoed: a URL that does not parse cannot have its password masked.
  if (baseUrl !== undefined && !URL.canParse(baseUrl)) throw new UsageError(`${named("base-url")} is not a URL`);
  const signupSmtp = get("signup-smtp");
  if (signupSmtp !== undefined) {
    // Checked now: a bad one failed only at the first sign-up that mails a confirmation.
    if (!URL.canParse(signupSmtp)) throw new UsageError(`${named("signup-smtp")} is not a URL; give smtp://user:password@host:587 or smtps://…`);
    const smtp = new URL(signupSmtp);
    if ((smtp.protocol !== "smtp:" && smtp.protocol !== "smtps:") || !smtp.hostname) {
      throw new UsageError(`${named("signup-smtp")} must be an smtp:// or smtps:// URL, got ${shownUrl(signupSmtp)}`);
    }
  }
  const tlsCert = get("tls-cert");
  const tlsKey = get("tls-key");
  if ((tlsCert === undefined) !== (tlsKey === undefined)) {
    throw new UsageError("--tls-cert and --tls-key must be given together");
  }
  checkKeyPair(named("tls-key"), certificateFile(named("tls-cert"), tlsCert), privateKeyFile(named("tls-key"), tlsKey));
  const upstreamCaFile = get("upstream-ca-file");
  certificateFile(named("upstream-ca-file"), upstreamCaFile);
  // Checked with the flags: found at the owner's creation, it left a database without an owner.
  const ownerEmail = get("owner-email") ?? "owner@localhost";
  if (!isValidEmail(ownerEmail)) throw new UsageError(`${named("owner-email")}: "${ownerEmail}" is not a valid email address`);
  const { database, redis } = resolveDependencies(args, env, get("redis"));
  return {
    host: get("host") ?? "127.0.0.1",
    port,
    dataDir: get("data") ?? "./data",
    database,
    redis,
    baseUrl,
    timeZone,
    maxBody: parseIntegerFlag(named("max-body"), get("max-body"), DEFAULT_MAX_BODY, 1),
    trustProxy: parseBooleanFlag(named("trust-proxy"), get("trust-proxy")),
    corsOrigins: corsOriginsFlag(named("cors-origins"), get("cors-origins")),
    tlsCert,
    tlsKey,
    upstreamCaFile,
    logLevel: logLevel as LogLevel,
    logFormat: logFormat as LogFormat,
    ownerEmail,
    secretKeyFile: get("secret-key-file"),
    fallbackSecretKeyFile: get("fallback-secret-key-file"),
    graceSeconds: parseIntegerFlag(named("grace"), get("grace"), 30, 0, MAX_TIMER_SECONDS),
    requestLogDays: parseIntegerFlag(named("request-log-days"), get("request-log-days"), DEFAULT_REQUEST_LOG_DAYS, 0, MAX_REQUEST_LOG_DAYS),
    maxAttempts: parseIntegerFlag(named("max-attempts"), get("max-attempts"), UPSTREAM_DEFAULTS.maxAttempts, 1),
    firstByteTimeoutMs: seconds("first-byte-timeout", UPSTREAM_DEFAULTS.firstByteTimeoutMs),
    streamIdleTimeoutMs: seconds("stream-idle-timeout", UPSTREAM_DEFAULTS.streamIdleTimeoutMs),
    drainTimeoutMs: seconds("drain-timeout", UPSTREAM_DEFAULTS.drainTimeoutMs),
    metricsToken: get("metrics-token"),
    byok,
    allowPrivateUpstreams: parseBooleanFlag(named("allow-private-upstreams"), get("allow-private-upstreams")),
    signup,
    signupSmtp,
    signupFrom: get("signup-from"),
  };
}

export const serveCommand = defineCommand({
  meta: { name: "serve", description: "Run the gateway, management API and console" },
  args: serveArgs,
  run: ({ args, rawArgs }) =>
    runOrExit(async () => {
      rejectUnknownFlags(rawArgs, serveArgs);
      // `--data "$DIR"` with DIR unset must not start a deployment on ./data.
      rejectEmptyValues(rawArgs, args, serveArgs);
      rejectStrayArguments(args);
      const config = resolveServeConfig(args);
      // With JSON logs, stderr holds JSON lines only: a collector would drop or mangle a plain one.
      const startLog = config.logFormat === "json" ? createLogger("warn", (line) => void process.stderr.write(`${line}\n`), "json") : undefined;
      for (const warning of serveWarnings(args, config)) {
        if (startLog) startLog.warn(warning);
        else process.stderr.write(`router: warning: ${warning}\n`);
      }
      // A port in use fails here, before a database or an owner key is created.
      assertCanListen(config.host, config.port);
      const notice = prepareDataDir(config.dataDir);
      if (notice) process.stdout.write(`router: ${notice}\n`);
      // A read-only or full disk fails somewhere in here: reported with the directory and the cause.
      const { deps, keyFile } = await writingDataDir(config.dataDir, async () => {
        clearSpool(config.dataDir);
        const deps = await buildDeps(config);
        // Redis away at start: the instance serves anyway and connects once Redis answers; the
        // operator hears at once which Redis it waits for (a wrong host or port shows here).
        // A password Redis refuses looks the same to the client (the connection is closed).
        if (config.redis !== undefined && deps.dependencies.status().redis === "down") {
          deps.log.warn(
            `Redis at ${shownUrl(config.redis)} does not answer or closes the connection (is it running there, and does it accept this URL's password?): model calls get 503 and /readyz says unavailable until it answers (it is tried again every second)`,
          );
        }
        const keyFile = await deps
          .exclusively(() => ensureInitialOwner(deps.store, deps.owners, config.dataDir, config.ownerEmail))
          .catch((error: unknown) => {
            deps.store.close();
            throw error;
          });
        return { deps, keyFile };
      });
      if (keyFile) process.stdout.write(`created owner ${config.ownerEmail}; its API key is in ${keyFile}\n`);
      let running;
      try {
        running = startServer(deps);
      } catch (error) {
        deps.store.close();
        throw error;
      }
      const server = running;
      const stopUpkeep = deps.store.startUpkeep(deps.log);
      const pruner = startRequestLogPruner({ store: deps.store, clock: deps.clock, log: deps.log, days: config.requestLogDays ?? DEFAULT_REQUEST_LOG_DAYS });
      // The pruner first: its last prune may be with the request log's writer, which upkeep stops.
      deps.beforeClose.push(() => pruner.stop(), stopUpkeep);
      let stopping = false;
      const shutdown = (signal: string) => {
        // A second signal (an impatient Ctrl-C, a supervisor repeating itself) must not
        // cut the graceful stop short.
        if (stopping) return;
        stopping = true;
        process.stdout.write(`router: ${signal} received, finishing in-flight requests\n`);
        server
          .stop()
          .then(() => process.exit(0))
          .catch((error: Error) => {
            deps.log.error("shutdown failed", { error: error.message });
            // The log writes in batches: flushed by the exit handler.
            process.exit(1);
          });
      };
      // Handlers first: a supervisor may signal as soon as it reads the listening line.
      process.on("SIGTERM", () => shutdown("SIGTERM"));
      process.on("SIGINT", () => shutdown("SIGINT"));
      process.stdout.write(`router listening on ${running.url} (console: ${running.url}/console/)\n`);
      // Start-up garbage (migrations, bundling the console, parsing the catalog) is not
      // needed again: collect it now rather than carry it until the heap fills.
      Bun.gc(true);
    }),
});
