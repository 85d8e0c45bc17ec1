import type { RedisClient } from "bun";
import { createLocalBus, readInvalidation, type Invalidation, type InvalidationBus } from "../../core/invalidation.ts";
import { RedisUnavailable, type RedisConnection } from "./connection.ts";

/**
 * The invalidation bus over Redis pub/sub: an event reaches this process's subscribers
 * as on the in-process bus (in order, awaited by the publisher) and, through one channel,
 * every other process on the same Redis and prefix, whose subscribers hear it as soon as
 * Redis delivers it. Pub/sub keeps nothing for a subscriber that was away, so one that
 * (re)subscribes after a lost connection hears `{kind: "everything"}`: it may have
 * missed events, and drops all it holds.
 */
export interface RedisBusOptions {
  connection: RedisConnection;
  /** Put before the channel's name, as before the State's keys (default `router:`). */
  prefix?: string;
  /** A subscriber that failed (as on the in-process bus). */
  onListenerError?: (error: unknown, event: Invalidation) => void;
  /** The subscription was lost or could not be made (it is tried again). */
  onSubscriptionError?: (error: unknown) => void;
  /** Other processes could not be told of an event now (it is sent again until they are). */
  onPublishError?: (error: unknown, event: Invalidation) => void;
  /** Wait before subscribing again after a lost connection (ms; doubles up to 30 s). */
  retryMs?: number;
}

export interface RedisBus extends InvalidationBus {
  /** Resolves once this process hears other processes' events. */
  ready(): Promise<void>;
  /** Whether this process hears other processes' events now (false while its subscription is lost). */
  listening(): boolean;
  close(): void;
}

interface Message {
  /** The publishing bus: its own subscribers already heard the event. */
  from: string;
  event: Invalidation;
}

export function createRedisBus(options: RedisBusOptions): RedisBus {
  const local = createLocalBus(options.onListenerError);
  const channel = `${options.prefix ?? "router:"}invalidation`;
  const id = crypto.randomUUID();
  const baseRetryMs = options.retryMs ?? 1000;
  let retryMs = baseRetryMs;
  let closed = false;
  let subscriber: RedisClient | undefined;
  let retryTimer: ReturnType<typeof setTimeout> | undefined;
  /** Events from elsewhere are delivered one after another, in the order Redis gave them. */
  let delivering: Promise<void> = Promise.resolve();
  const deliver = (event: Invalidation) => {
    delivering = delivering.then(() => local.publish(event));
  };

  let markReady!: () => void;
  const isReady = new Promise<void>((resolve) => (markReady = resolve));
  /** Whether a subscription was ever attempted: a later one may have missed events. */
  let attempted = false;

  const onMessage = (text: string) => {
    let message: Message;
    try {
      message = JSON.parse(text) as Message;
    } catch {
      // Not JSON: another version's encoding of an event, which may have changed anything.
      return deliver({ kind: "everything" });
    }
    // Another version's event this one cannot read drops everything (readInvalidation).
    if (typeof message === "object" && message !== null && message.from !== id) deliver(readInvalidation(message.event));
  };

  const subscribe = async () => {
    retryTimer = undefined;
    if (closed) return;
    const missedSome = attempted;
    attempted = true;
    try {
      const client = await options.connection.dedicated();
      if (closed) {
        client.close();
        return;
      }
      client.onclose = (error) => {
        if (subscriber !== client || closed) return;
        subscriber = undefined;
        options.onSubscriptionError?.(new RedisUnavailable("subscription lost", error));
        schedule();
      };
      await client.subscribe(channel, onMessage);
      subscriber = client;
      retryMs = baseRetryMs;
      markReady();
      if (missedSome) deliver({ kind: "everything" });
    } catch (error) {
      options.onSubscriptionError?.(error instanceof RedisUnavailable ? error : new RedisUnavailable("subscribe failed", error));
      schedule();
    }
  };
  const schedule = () => {
    if (closed || retryTimer) return;
    retryTimer = setTimeout(() => void subscribe(), retryMs);
    retryTimer.unref?.();
    retryMs = Math.min(retryMs * 2, 30_000);
  };
  void subscribe();

  /**
   * Events other processes could not be told of (Redis away), sent again every second
   * until they are, in order. The write that published one has committed: failing its
   * request would have its client retry it (a credit grant made twice), so it succeeds,
   * and the others hear of the change once Redis answers (or, having lost their own
   * subscription meanwhile, drop everything they hold).
   */
  const unsent: string[] = [];
  let resendTimer: ReturnType<typeof setTimeout> | undefined;
  const resend = async () => {
    resendTimer = undefined;
    while (unsent.length > 0 && !closed) {
      try {
        await options.connection.send("PUBLISH", [channel, unsent[0]!]);
        unsent.shift();
      } catch {
        break;
      }
    }
    if (unsent.length > 0 && !closed) resendTimer ??= setTimeout(() => void resend(), 1000);
    resendTimer?.unref?.();
  };

  return {
    async publish(event) {
      // Other processes are told while this one's subscribers work.
      const text = JSON.stringify({ from: id, event } satisfies Message);
      const remote = unsent.length > 0 ? Promise.reject(new RedisUnavailable("events before this one wait to be sent", undefined, "not sent")) : options.connection.send("PUBLISH", [channel, text]);
      const [, told] = await Promise.allSettled([local.publish(event), remote]);
      if (told.status === "rejected") {
        if (!unsent.includes(text)) unsent.push(text);
        options.onPublishError?.(told.reason, event);
        resendTimer ??= setTimeout(() => void resend(), 1000);
        resendTimer.unref?.();
      }
    },
    subscribe: local.subscribe,
    ready: () => isReady,
    listening: () => subscriber !== undefined && !closed,
    close() {
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      if (resendTimer) clearTimeout(resendTimer);
      subscriber?.close();
      subscriber = undefined;
      options.connection.close();
    },
  };
}
