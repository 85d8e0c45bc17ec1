/**
 * The admin commands that talk to a running router over HTTP (`router keys`,
 * `accounts`, `config`, `usage`, `news`, `logs`, `requests`, `route`): where the
 * server is and which key to use, one request helper that turns the server's error
 * envelope into exit code 1 with the server's own message, and the citty plumbing
 * every such command shares (unknown flags and stray arguments are usage errors,
 * exit code 2).
 */
import { defineCommand, type ArgsDef, type CommandDef } from "citty";
import { readFileSync } from "node:fs";
import { flagOrEnv, optionName, parseIntegerFlag, rejectEmptyValues, rejectStrayArguments, rejectUnknownFlags, requireSubCommand, UsageError } from "./flags.ts";
import { runOrExit } from "./run.ts";
import { lostMessage, redirectMessage, refusalMessage } from "./client-errors.ts";
import { isWrite, newIdempotencyKey, sendWithResends } from "../wire/resend.ts";

export const DEFAULT_URL = "http://127.0.0.1:8080";
/**
 * Seconds one request may take, its resends included (`--timeout`, ROUTER_TIMEOUT).
 * Management calls answer in well under a second and the slowest (`keys test`) waits 10 s
 * for the upstream: a server that takes the connection and says nothing is reported
 * after this, not waited on for minutes.
 */
export const DEFAULT_TIMEOUT_S = 30;

/** Flags of every command that talks to a server. */
export const remoteArgs = {
  url: {
    type: "string",
    description: `Base URL of the router (env ROUTER_URL; default ${DEFAULT_URL})`,
    valueHint: "url",
  },
  key: {
    type: "string",
    description: "API key; prefer env ROUTER_KEY, a flag stays in your shell history",
    valueHint: "key",
  },
  json: { type: "boolean", description: "Print the server's JSON instead of a table" },
  timeout: {
    type: "string",
    description: `Seconds to wait for each answer, resends included, before giving up with exit 1 (env ROUTER_TIMEOUT; default ${DEFAULT_TIMEOUT_S})`,
    valueHint: "s",
  },
  "idempotency-key": {
    type: "string",
    description: "Writes only: run this command's writes once, whoever sends them again with the same key (a re-run script, a retried job); default a new key per run",
    valueHint: "key",
  },
} as const satisfies ArgsDef;


/** `--page-info` of the list commands: with --json, the paging headers printed with the rows. */
export const pageInfoArg = {
  "page-info": { type: "boolean", description: "With --json: print {page, size, total, pages, items} instead of the bare array, so a script can page" },
} as const satisfies ArgsDef;

/** `--page-info` says how to print --json, so it is a mistake without it. */
export function checkPageInfo(args: Args): boolean {
  const wanted = args["page-info"] === true;
  if (wanted && args.json !== true) throw new UsageError("--page-info goes with --json (the table shows the page under it)");
  return wanted;
}

/** Parsed flags as citty hands them over; read through the helpers below. */
export type Args = Record<string, unknown> & { _: string[] };

/** The server answered with an error: its message is what the user sees (exit code 1). */
export class RequestRefused extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export interface Reply<T> {
  status: number;
  headers: Headers;
  body: T;
}

export interface Client {
  readonly baseUrl: string;
  request<T = unknown>(method: string, path: string, options?: { query?: Record<string, string | number | undefined>; body?: unknown }): Promise<Reply<T>>;
}

function baseUrlOf(args: Args, env: NodeJS.ProcessEnv): string {
  const raw = flagOrEnv(args, "url", env) ?? DEFAULT_URL;
  const name = optionName(args, "url", env);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    // Not echoed: what is not a URL may be the key, ROUTER_URL and ROUTER_KEY swapped.
    throw new UsageError(`${name} is not a URL (e.g. ${DEFAULT_URL})`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new UsageError(`${name} must be an http:// or https:// URL, got "${raw}"`);
  if (url.username || url.password || url.search || url.hash) throw new UsageError(`${name} must be a plain base URL (no credentials, query or fragment)`);
  return url.href.replace(/\/+$/, "");
}

function keyOf(args: Args, env: NodeJS.ProcessEnv, warn: (line: string) => void): string {
  const fromFlag = typeof args.key === "string" && args.key !== "";
  const key = flagOrEnv(args, "key", env)?.trim();
  if (!key) throw new UsageError("no API key: set ROUTER_KEY (or pass --key)");
  if (/\s/.test(key)) throw new UsageError("the API key must not contain spaces or line breaks");
  if (fromFlag) warn("router: warning: --key leaves the key in your shell history; prefer the ROUTER_KEY environment variable\n");
  return key;
}

/** `--timeout` or ROUTER_TIMEOUT, in seconds. */
function timeoutOf(args: Args, env: NodeJS.ProcessEnv): number {
  const raw = flagOrEnv(args, "timeout", env);
  if (raw === undefined) return DEFAULT_TIMEOUT_S;
  if (!/^\d+$/.test(raw.trim()) || Number(raw) < 1 || Number(raw) > 86_400) {
    throw new UsageError(`${optionName(args, "timeout", env)} must be a whole number of seconds from 1 to 86400, got "${raw}"`);
  }
  return Number(raw);
}

/**
 * The Idempotency-Key of each write of this run, in order: `--idempotency-key` (else a
 * random key) for the first and `<key>.2`, `<key>.3`, … for the next (a re-run makes the
 * same writes in the same order, so each finds its own key).
 */
function idempotencyKeysOf(args: Args): { next(): string; readonly base: string } {
  const given = stringFlag(args, "idempotency-key");
  if (given !== undefined && !/^[\x21-\x7e]{1,240}$/.test(given)) throw new UsageError("--idempotency-key must be 1 to 240 visible ASCII characters (no spaces)");
  // Without one, a random key for the run, in the same scheme: it is what a repeat of the
  // command passes as --idempotency-key after a write whose outcome is unknown.
  const base = given ?? newIdempotencyKey();
  let writes = 0;
  return {
    base,
    next() {
      writes++;
      return writes === 1 ? base : `${base}.${writes}`;
    },
  };
}

/** A client for the server named by `--url`/ROUTER_URL, authenticated with `--key`/ROUTER_KEY. */
export function createClient(args: Args, env: NodeJS.ProcessEnv = process.env, warn = (line: string) => void process.stderr.write(line)): Client {
  const baseUrl = baseUrlOf(args, env);
  const seconds = timeoutOf(args, env);
  const key = keyOf(args, env, warn);
  const writeKeys = idempotencyKeysOf(args);
  return {
    baseUrl,
    async request<T>(method: string, path: string, options: { query?: Record<string, string | number | undefined>; body?: unknown } = {}) {
      const url = new URL(baseUrl + path);
      for (const [name, value] of Object.entries(options.query ?? {})) {
        if (value !== undefined && value !== "") url.searchParams.set(name, String(value));
      }
      const headers: Record<string, string> = { authorization: `Bearer ${key}`, accept: "application/json" };
      if (options.body !== undefined) headers["content-type"] = "application/json";
      // A write is sent again when its answer is lost: under one Idempotency-Key, so it runs once.
      const write = isWrite(method);
      if (write) headers["idempotency-key"] = writeKeys.next();
      // One deadline for the request, resends included: a resend only uses what is left of it.
      const deadline = Date.now() + seconds * 1000;
      const left = () => deadline - Date.now();
      const errors: unknown[] = [];
      const sent = await sendWithResends(
        write,
        async () => {
          if (left() <= 0) throw new DOMException("the time is spent", "TimeoutError");
          try {
            return await fetch(url, {
              method,
              headers,
              body: options.body === undefined ? undefined : JSON.stringify(options.body),
              redirect: "manual",
              signal: AbortSignal.timeout(left()),
            });
          } catch (error) {
            errors.push(error);
            throw error;
          }
        },
        (ms) => Bun.sleep(Math.max(0, Math.min(ms, left()))),
      );
      if ("lost" in sent) {
        if (errors.length === 0 || errors[errors.length - 1] !== sent.lost) errors.push(sent.lost);
        throw new Error(lostMessage(baseUrl, seconds, errors, write ? writeKeys.base : undefined));
      }
      const { response, text } = sent;
      if (!response.ok) {
        // Whatever answered may echo the request (a debugging proxy, a misdirected --url): never print the key.
        const message = redirectMessage(baseUrl, response) ?? refusalMessage(response.status, response.statusText, text);
        throw new RequestRefused(`${message.split(key).join("***")} (HTTP ${response.status})`, response.status);
      }
      let body: T;
      try {
        body = JSON.parse(text) as T;
      } catch {
        throw new Error(`${baseUrl} answered ${method} ${path} with something that is not JSON; is --url the router?`);
      }
      return { status: response.status, headers: response.headers, body };
    },
  };
}

// ---------------------------------------------------------------------------
// Reading flags
// ---------------------------------------------------------------------------

export function stringFlag(args: Args, name: string): string | undefined {
  const value = args[name];
  return typeof value === "string" && value !== "" ? value : undefined;
}

export function intFlag(args: Args, name: string, min = 1): number | undefined {
  const value = stringFlag(args, name);
  if (value === undefined) return undefined;
  const n = parseIntegerFlag(name, value, 0, min);
  // Every --size is a list's page, at most 100 (http/pagination.ts): a usage error, not a refusal.
  if (name === "size" && n > 100) throw new UsageError(`--size must be at most 100, got "${value}"`);
  return n;
}

export function numberFlag(args: Args, name: string): number | undefined {
  const value = stringFlag(args, name);
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n)) throw new UsageError(`--${name} must be a number, got "${value}"`);
  return n;
}

export function requireFlag(args: Args, name: string): string {
  const value = stringFlag(args, name);
  if (value === undefined) throw new UsageError(`--${name} is required; see --help`);
  return value;
}

/** A positional argument the command cannot do without. */
export function requirePositional(args: Args, name: string): string {
  const value = args[name];
  if (typeof value !== "string" || value === "") throw new UsageError(`missing argument ${name.toUpperCase()}; see --help`);
  return value;
}

/** An id in a path: digits only, so nothing can be smuggled into the URL. */
export function idArgument(args: Args, name = "id"): string {
  const value = requirePositional(args, name);
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new UsageError(`${name.toUpperCase()} must be a positive integer, got "${value}"`);
  return value;
}

/** Reads all of stdin (for `-` values: secrets and contents kept off the command line). */
export function readStdin(): string {
  return readFileSync(0, "utf8");
}

/** A JSON object given inline or as `@file`; anything else is a usage error. */
export function jsonObjectFlag(args: Args, name: string): Record<string, unknown> | undefined {
  const raw = stringFlag(args, name);
  if (raw === undefined) return undefined;
  let text = raw;
  if (raw.startsWith("@")) {
    try {
      text = readFileSync(raw.slice(1), "utf8");
    } catch (error) {
      throw new UsageError(`--${name}: cannot read ${raw.slice(1)}: ${(error as Error).message}`);
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--${name} is not valid JSON: ${(error as Error).message}`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new UsageError(`--${name} must be a JSON object`);
  return value as Record<string, unknown>;
}

// ---------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------

export interface RemoteContext {
  args: Args;
  client: Client;
  /** `--json`: print the server's JSON as is. */
  json: boolean;
}

/**
 * A command that talks to the server: its own flags plus --url, --key and --json;
 * `check` validates the command line before anything is sent (or a key is asked for).
 */
export function remoteCommand(options: {
  name: string;
  description: string;
  args: ArgsDef;
  check?: (args: Args) => void;
  run: (context: RemoteContext) => Promise<void>;
}): CommandDef<ArgsDef> {
  const defs: ArgsDef = { ...options.args, ...remoteArgs };
  return defineCommand({
    meta: { name: options.name, description: options.description },
    args: defs,
    run: ({ args, rawArgs }) =>
      runOrExit(async () => {
        const parsed = args as unknown as Args;
        rejectUnknownFlags(rawArgs, defs);
        rejectStrayArguments(parsed, defs);
        rejectEmptyValues(rawArgs, parsed, defs);
        options.check?.(parsed);
        const client = createClient(parsed);
        await options.run({ args: parsed, client, json: parsed.json === true });
      }),
  });
}

/**
 * A command made of subcommands (`router keys list|add|…`). citty reports a missing
 * or unknown subcommand with exit code 1; here it is a usage error (2).
 */
export function commandGroup(name: string, description: string, subCommands: Record<string, CommandDef<ArgsDef>>): CommandDef<ArgsDef> {
  return defineCommand({
    meta: { name, description },
    subCommands,
    setup: requireSubCommand(`router ${name}`, Object.keys(subCommands)),
  });
}
