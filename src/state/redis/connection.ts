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

export class RedisUnavailable extends Error {
  constructor(what: string, cause: unknown) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    super(withoutCredentials(`Redis ${what}: ${detail}`));
    this.name = "RedisUnavailable";
  }
}

export function connectRedis(url: string, options: RedisConnectionOptions = {}): RedisConnection {
  const clientOptions = { enableOfflineQueue: false, autoReconnect: false, connectionTimeout: options.connectTimeoutMs ?? 2000 };
  let current: { client: RedisClient; ready: Promise<void>; closed: boolean } | undefined;
  let closed = false;
  const commandTimeoutMs = options.commandTimeoutMs ?? 5000;

  /** Answers the command's reply, or fails once it went unanswered too long (and drops the connection). */
  const bounded = <T>(entry: { client: RedisClient; closed: boolean }, reply: Promise<T>): Promise<T> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(new Error(`no answer within ${commandTimeoutMs} ms`));
        entry.closed = true;
        entry.client.close();
      }, commandTimeoutMs);
    });
    return Promise.race([reply, timeout]).finally(() => clearTimeout(timer));
  };

  const open = () => {
    const client = new RedisClient(url, clientOptions);
    const entry = { client, ready: client.connect(), closed: false };
    client.onclose = () => {
      entry.closed = true;
    };
    // A failed connect is reported to the call that awaits it; the next call starts afresh.
    entry.ready.catch(() => {
      entry.closed = true;
    });
    return entry;
  };

  const client = async (): Promise<{ client: RedisClient; closed: boolean }> => {
    if (closed) throw new RedisUnavailable("connection", new Error("closed"));
    if (!current || current.closed) {
      current?.client.close();
      current = open();
    }
    const entry = current;
    try {
      await entry.ready;
    } catch (error) {
      throw new RedisUnavailable("unreachable", error);
    }
    return entry;
  };

  const send = async (command: string, args: readonly string[]): Promise<unknown> => {
    const entry = await client();
    try {
      return await bounded(entry, entry.client.send(command, args as string[]));
    } catch (error) {
      throw new RedisUnavailable(`${command} failed`, error);
    }
  };

  return {
    send,
    async run(script, keys, args) {
      const entry = await client();
      const rest = [String(keys.length), ...keys, ...args];
      try {
        return await bounded(entry, entry.client.send("EVALSHA", [script.sha, ...rest]));
      } catch (error) {
        if (!(error instanceof Error) || !error.message.startsWith("NOSCRIPT")) throw new RedisUnavailable("script failed", error);
      }
      try {
        return await bounded(entry, entry.client.send("EVAL", [script.source, ...rest]));
      } catch (error) {
        throw new RedisUnavailable("script failed", error);
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
      current?.client.close();
      current = undefined;
    },
  };
}
