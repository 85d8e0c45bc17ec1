import type { LogFormat, LogLevel } from "./core/log.ts";
import type { CorsOrigins } from "./http/cors.ts";

/** Everything `router serve` can be told, after flags, environment and defaults are merged. */
export interface ServeConfig {
  host: string;
  /** 0 picks a free port. */
  port: number;
  dataDir: string;
  /** The public URL clients use; upstream URLs pointing at it are refused. */
  baseUrl?: string;
  /** IANA zone of the business date (daily quotas, bills, rotation confirm). */
  timeZone: string;
  /** Largest request body accepted, in bytes. */
  maxBody: number;
  trustProxy: boolean;
  /** Pages (browser origins) whose calls the router answers readably: `*` by default (http/cors.ts). */
  corsOrigins?: CorsOrigins;
  tlsCert?: string;
  tlsKey?: string;
  /** PEM file of extra CAs trusted for upstream HTTPS, on top of the public roots. */
  upstreamCaFile?: string;
  logLevel: LogLevel;
  /** How log lines are written: logfmt (default) or JSON lines. */
  logFormat?: LogFormat;
  /**
   * PostgreSQL URL (`postgres://…`, TLS as its `sslmode` says): the store of a scaled-out
   * deployment. Without it, the SQLite file under `dataDir`.
   */
  database?: string;
  /** Redis URL (`redis://…` or `rediss://…`): the shared State and invalidation bus; needs `database`. Without it, in memory. */
  redis?: string;
  /** Email of the owner created on first start. */
  ownerEmail: string;
  /** Where the 32-byte sealing key lives (default `<data>/secret.key`). */
  secretKeyFile?: string;
  /** A key sealed values are also opened with, never sealed with, while the sealing key is rotated (README, "Rotating the sealing key"). */
  fallbackSecretKeyFile?: string;
  /** Seconds in-flight requests get to finish on SIGTERM/SIGINT. */
  graceSeconds: number;
  /**
   * Settled usage rows that may wait for the database before model calls are refused
   * with 503 (default 100,000: see docs/architecture.md, "Store on PostgreSQL").
   */
  usageBacklogLimit?: number;
  /** Days of request log kept (default 30, metering/request-log-retention.ts); 0: no call is recorded, and the log is emptied at start. */
  requestLogDays?: number;
  /** Upstream attempts per call (first try included). */
  maxAttempts: number;
  /** Longest wait for an upstream's response headers (connecting included) and, for a stream, its first chunk, ms. */
  firstByteTimeoutMs: number;
  /** Longest silence between two chunks of an upstream stream, ms. */
  streamIdleTimeoutMs: number;
  /** After a client leaves a stream, how long the upstream is still read for its usage, ms. */
  drainTimeoutMs: number;
  /**
   * Largest upstream answer read whole (a JSON answer, a stream's first event), in bytes
   * as inflated (default 256 MiB, gateway/bounded-read.ts); past it the answer is no answer.
   */
  maxAnswerBytes?: number;
  /**
   * Seconds a model call's body may take to arrive before the connection is closed
   * (default 255, the most Bun's connection timer takes: see gateway/pipeline.ts).
   */
  bodyTimeoutSeconds?: number;
  /** A bearer token that may read /metrics without being an owner key. */
  metricsToken?: string;
  /** The BYOK (multi-tenant) deployment style: every owner runs its own tenant. */
  byok?: boolean;
  /** BYOK: tenants' provider URLs may point at private and loopback networks too. */
  allowPrivateUpstreams?: boolean;
  /** BYOK: first-level accounts may register themselves through POST /x-signup. */
  signup?: boolean;
  /** SMTP URL for sign-up confirmations (`smtp://user:pass@host:587`); without it sign-ups are immediate. */
  signupSmtp?: string;
  /** Sender address of sign-up confirmations. */
  signupFrom?: string;
}

export const DEFAULT_MAX_BODY = 64 * 1024 * 1024;

/** Defaults of the upstream limits, generous because reasoning models may think for minutes. */
export const UPSTREAM_DEFAULTS = {
  maxAttempts: 3,
  firstByteTimeoutMs: 600_000,
  streamIdleTimeoutMs: 300_000,
  drainTimeoutMs: 60_000,
} as const;
