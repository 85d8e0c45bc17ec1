import { RedisClient } from "bun";

/**
 * One Redis connection that heals itself. Bun's `RedisClient` queues commands while it
 * reconnects and, once it used up its attempts, stays failed for good; here it neither
 * queues (a call while Redis is away fails at once, so a model call gets its 503 instead
 * of hanging) nor retries on its own: a call that finds the client closed makes a new
 * one, so the router recovers by itself when Redis returns.
 *
 * Every failure is rethrown as an error whose message says "Redis" (callers turn it into
 * a 503) and never holds the URL, which may carry a password.
 */
export interface RedisConnection {
  /** Sends one command. */
  send(command: string, args: readonly string[]): Promise<unknown>;
  /** Runs a Lua script by its digest, loading it when Redis does not hold it (a restart flushes scripts). */
  run(script: Script, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  /**
   * How many times the connection was established. A change means it was lost and made
   * again: Redis may have restarted or failed over meanwhile, and lost or rolled back
   * what it last acknowledged.
   */
  connects(): number;
  /** Whether the connection is up now (no command is sent to find out). */
  up(): boolean;
  /** A client of its own (pub/sub needs one); connected, never shared. */
  dedicated(): Promise<RedisClient>;
  close(): void;
}

export interface Script {
  readonly source: string;
  readonly sha: string;
}

export function script(source: string): Script {
  const sha = new Bun.CryptoHasher("sha1").update(source).digest("hex");
  return { source, sha };
}

export interface RedisConnectionOptions {
  /** How long to wait for a connection before a call fails (ms). */
  connectTimeoutMs?: number;
  /**
   * How long a command may go unanswered (ms): a Redis that stalls without closing the
   * connection would otherwise hold every call; the connection is then replaced.
   */
  commandTimeoutMs?: number;
}

/** Removes credentials from anything that might echo a URL. */
export function withoutCredentials(text: string): string {
  return text.replace(/(\/\/)[^@/\s]*@/g, "$1***@");
}

/** A connection and what the watchdog knows of it. */
interface Entry {
  client: RedisClient;
  ready: Promise<void>;
  connected: boolean;
  closed: boolean;
  /** Commands sent and not answered yet. */
  inFlight: number;
  /** When the last reply came (or the first of the outstanding commands went). */
  lastReply: number;
  /** Why the watchdog dropped the connection: what its waiting commands fail with. */
  stalled?: Error;
}

/**
 * What became of a command that failed: never sent (no connection), answered by Redis
 * with an error (a script's error: it ran, or refused to), or unknown (the connection
 * dropped or went silent after it was sent: it may have run).
 */
export type Outcome = "not sent" | "answered" | "unknown";

export class RedisUnavailable extends Error {
  constructor(
    what: string,
    cause: unknown,
    readonly outcome: Outcome = "unknown",
  ) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    super(withoutCredentials(`Redis ${what}: ${detail}`));
    this.name = "RedisUnavailable";
  }
}

/** Whether a failed command may have run: its answer was lost with the connection. */
export const answerLost = (error: unknown): boolean => error instanceof RedisUnavailable && error.outcome === "unknown";
/** Whether Redis answered a command with an error (sent again, it would fail again). */
export const answeredWithError = (error: unknown): boolean => error instanceof RedisUnavailable && error.outcome === "answered";

/** A failure of a command sent on a connection: Redis's own error reply, or a connection lost with the command on it. */
const outcomeOf = (error: unknown): Outcome => ((error as { code?: string } | null)?.code === "ERR_REDIS_SERVER_ERROR" ? "answered" : "unknown");

export function connectRedis(url: string, options: RedisConnectionOptions = {}): RedisConnection {
  const clientOptions = { enableOfflineQueue: false, autoReconnect: false, connectionTimeout: options.connectTimeoutMs ?? 2000 };
  let current: Entry | undefined;
  let closed = false;
  let connects = 0;
  const commandTimeoutMs = options.commandTimeoutMs ?? 5000;

  /**
   * One watchdog for the connection instead of a timer per command (a timer, a promise
   * and a race on every command showed in the scale-out profile): commands outstanding
   * and no reply for longer than the timeout means Redis stalled, so the connection is
   * dropped, which fails what waits on it; the next call connects afresh.
   */
  const watchdog = setInterval(
    () => {
      const entry = current;
      if (!entry || entry.closed || entry.inFlight === 0 || performance.now() - entry.lastReply <= commandTimeoutMs) return;
      entry.stalled = new Error(`no answer within ${commandTimeoutMs} ms`);
      entry.closed = true;
      entry.client.close();
    },
    Math.max(10, Math.min(1000, commandTimeoutMs / 4)),
  );
  watchdog.unref?.();

  /** Sends on the entry, counting it as outstanding until its reply. */
  const issue = async (entry: Entry, command: string, args: string[]): Promise<unknown> => {
    if (entry.inFlight++ === 0) entry.lastReply = performance.now();
    try {
      const reply = await entry.client.send(command, args);
      entry.lastReply = performance.now();
      return reply;
    } catch (error) {
      throw entry.stalled ?? error;
    } finally {
      entry.inFlight--;
    }
  };

  const open = (): Entry => {
    const client = new RedisClient(url, clientOptions);
    const entry: Entry = { client, ready: client.connect(), connected: false, closed: false, inFlight: 0, lastReply: 0 };
    client.onclose = () => {
      entry.closed = true;
    };
    // A failed connect is reported to the call that awaits it; the next call starts afresh.
    entry.ready.then(
      () => {
        entry.connected = true;
        connects++;
      },
      () => {
        entry.closed = true;
      },
    );
    return entry;
  };

  const client = async (): Promise<Entry> => {
    if (closed) throw new RedisUnavailable("connection", new Error("closed"), "not sent");
    if (!current || current.closed) {
      current?.client.close();
      current = open();
    }
    const entry = current;
    try {
      await entry.ready;
    } catch (error) {
      throw new RedisUnavailable("unreachable", error, "not sent");
    }
    return entry;
  };
  /** The connection when it is up: no await on the request path's common case. */
  const live = (): Entry | undefined => (!closed && current?.connected && !current.closed ? current : undefined);

  const send = async (command: string, args: readonly string[]): Promise<unknown> => {
    const entry = live() ?? (await client());
    try {
      return await issue(entry, command, args as string[]);
    } catch (error) {
      throw new RedisUnavailable(`${command} failed`, error, outcomeOf(error));
    }
  };

  return {
    send,
    connects: () => connects,
    up: () => live() !== undefined,
    async run(script, keys, args) {
      const entry = live() ?? (await client());
      const rest = [String(keys.length), ...keys, ...args];
      try {
        return await issue(entry, "EVALSHA", [script.sha, ...rest]);
      } catch (error) {
        if (!(error instanceof Error) || !error.message.startsWith("NOSCRIPT")) throw new RedisUnavailable("script failed", error, outcomeOf(error));
      }
      try {
        return await issue(entry, "EVAL", [script.source, ...rest]);
      } catch (error) {
        throw new RedisUnavailable("script failed", error, outcomeOf(error));
      }
    },
    async dedicated() {
      if (closed) throw new RedisUnavailable("connection", new Error("closed"));
      const redis = new RedisClient(url, clientOptions);
      try {
        await redis.connect();
      } catch (error) {
        redis.close();
        throw new RedisUnavailable("unreachable", error);
      }
      return redis;
    },
    close() {
      closed = true;
      clearInterval(watchdog);
      current?.client.close();
      current = undefined;
    },
  };
}
