import { writeSync } from "node:fs";
import { redact } from "./redact.ts";

export type LogLevel = "error" | "warn" | "info" | "debug";
export const LOG_LEVELS: readonly LogLevel[] = ["error", "warn", "info", "debug"];

/** logfmt for people and grep; JSON lines for collectors (Loki, Datadog, CloudWatch, Elastic) that index each field. */
export type LogFormat = "logfmt" | "json";
export const LOG_FORMATS: readonly LogFormat[] = ["logfmt", "json"];

const RANK: Record<LogLevel, number> = { error: 0, warn: 1, info: 2, debug: 3 };

export type LogFields = Record<string, string | number | boolean | null | undefined>;

export interface Logger {
  readonly level: LogLevel;
  error(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  debug(message: string, fields?: LogFields): void;
  enabled(level: LogLevel): boolean;
}

export type LogSink = (line: string) => void;

/**
 * Lines to stderr in batches: one write every 50 ms (or per 64 KiB) instead of one per
 * line, which at thousands of requests a second cost more than the request itself.
 * Pending lines are written when the process exits.
 */
function createBatchedStderr(): LogSink {
  let pending: string[] = [];
  let size = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (pending.length === 0) return;
    const text = pending.join("\n") + "\n";
    pending = [];
    size = 0;
    try {
      writeSync(2, text);
    } catch {
      // stderr closed: nothing useful left to do with a log line.
    }
  };
  process.on("exit", flush);
  return (line) => {
    pending.push(line);
    size += line.length;
    if (size >= 65_536) flush();
    else if (!timer) {
      timer = setTimeout(flush, 50);
      timer.unref();
    }
  };
}

let sharedStderr: LogSink | undefined;
const stderrSink: LogSink = (line) => (sharedStderr ??= createBatchedStderr())(line);

const BARE = /^[^\s"=]+$/;

function formatValue(value: string | number | boolean | null): string {
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  const text = String(value);
  return BARE.test(text) ? text : JSON.stringify(text);
}

/** The ISO time of the current millisecond, formatted once per millisecond: many lines share one. */
let stampedAt = -1;
let stamp = "";
function isoNow(): string {
  const now = Date.now();
  if (now !== stampedAt) {
    stampedAt = now;
    stamp = new Date(now).toISOString();
  }
  return stamp;
}

/** The members every line starts with: a field of the same name is written with a `_` after it, never over them. */
const RESERVED = new Set(["time", "level", "msg"]);

function logfmtLine(at: LogLevel, message: string, fields: LogFields | undefined): string {
  let line = `time=${isoNow()} level=${at} msg=${formatValue(message)}`;
  if (fields) {
    for (const key in fields) {
      const value = fields[key];
      if (value !== undefined) line += ` ${RESERVED.has(key) ? `${key}_` : key}=${formatValue(value)}`;
    }
  }
  return line;
}

function jsonLine(at: LogLevel, message: string, fields: LogFields | undefined): string {
  const line: Record<string, string | number | boolean | null> = { time: isoNow(), level: at, msg: message };
  if (fields) {
    for (const key in fields) {
      const value = fields[key];
      if (value !== undefined) line[RESERVED.has(key) ? `${key}_` : key] = value;
    }
  }
  return JSON.stringify(line);
}

/**
 * One line per entry on stderr: logfmt (`time=… level=… msg=… key=value`) or a JSON
 * object with the same members. Every line passes through `redact`, so even a careless
 * field cannot print a key.
 */
export function createLogger(level: LogLevel = "info", sink: LogSink = stderrSink, format: LogFormat = "logfmt"): Logger {
  const threshold = LOG_LEVELS.indexOf(level);
  const enabled = (at: LogLevel) => RANK[at] <= threshold;
  const render = format === "json" ? jsonLine : logfmtLine;
  const write = (at: LogLevel, message: string, fields?: LogFields) => {
    if (!enabled(at)) return;
    sink(redact(render(at, message, fields)));
  };
  return {
    level,
    enabled,
    error: (m, f) => write("error", m, f),
    warn: (m, f) => write("warn", m, f),
    info: (m, f) => write("info", m, f),
    debug: (m, f) => write("debug", m, f),
  };
}

/** A failure logged once per outage, not on every retry, and its end once. */
export function outage(log: Logger, level: "error" | "warn", recovered: string) {
  let failing = false;
  return {
    failed(message: string, fields: LogFields) {
      if (!failing) log[level](message, fields);
      failing = true;
    },
    succeeded() {
      if (failing) log.info(recovered);
      failing = false;
    },
  };
}
