import type { Family } from "../http/family.ts";
import { createSseDecoder, type SseEvent } from "./sse/decoder.ts";
import { streamBroken, streamErrorEvent, streamTimeout } from "./stream-events.ts";
import { createStreamUsageTap, HAS_USAGE_OBJECT } from "./usage/extract.ts";
import type { Usage } from "./usage/types.ts";

/** How a relayed stream ended, for metering. */
export interface StreamEnd {
  usage: Usage | undefined;
  /** `complete`: the upstream finished; `client_gone`: the client left (upstream drained); `timeout`/`broken`: ended by an error event. */
  ending: "complete" | "client_gone" | "timeout" | "broken";
  /** Bytes of event data seen, for estimating usage the upstream did not report. */
  dataBytes: number;
}

export interface StreamOptions {
  family: Family;
  /** Drop the usage-only chunk the router asked for on the client's behalf (OpenAI chat). */
  hideUsageChunk: boolean;
  /** Longest silence between upstream chunks before the stream is ended with an error event. */
  idleMs: number;
  /** After the client leaves, how long to keep reading the upstream for its usage report. */
  drainMs: number;
  /** Cuts the upstream connection. */
  abortUpstream(): void;
  onEnd(end: StreamEnd): void;
  /** Sees every decoded event (e.g. to learn a created object's id). */
  watch?: (event: SseEvent) => void;
}

const encoder = new TextEncoder();

/** An OpenAI chunk that carries only usage (no choices): the one the client did not ask for. */
function isUsageOnlyChunk(data: string): boolean {
  if (!HAS_USAGE_OBJECT.test(data)) return false;
  try {
    const chunk = JSON.parse(data) as { choices?: unknown[]; usage?: unknown };
    return Array.isArray(chunk.choices) && chunk.choices.length === 0 && chunk.usage != null;
  } catch {
    return false;
  }
}

export type ReadResult = Awaited<ReturnType<ReadableStreamDefaultReader<Uint8Array>["read"]>>;

/**
 * Relays an upstream SSE body to the client chunk by chunk as it arrives, reading
 * usage on the side with a real SSE decoder. If the client leaves, the upstream is
 * still read (for at most `drainMs`) so the call is metered with the usage the
 * upstream reports, not a guess.
 *
 * `first` is the body's first read, already awaited by the relay (under the
 * first-byte limit, so a stream that stalls before its first byte can be retried
 * elsewhere); the idle limit applies between chunks after it.
 */
export function relayStream(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  first: ReadResult | undefined,
  options: StreamOptions,
): ReadableStream<Uint8Array> {
  const tap = createStreamUsageTap(options.family);
  let dataBytes = 0;
  let pending: Uint8Array[] = [];
  const decoder = createSseDecoder((event: SseEvent) => {
    dataBytes += event.data.length;
    tap.onEvent(event);
    options.watch?.(event);
    if (options.hideUsageChunk) {
      if (isUsageOnlyChunk(event.data)) return;
      const head = event.event ? `event: ${event.event}\n` : "";
      pending.push(encoder.encode(`${head}data: ${event.data.replace(/\n/g, "\ndata: ")}\n\n`));
    }
  });
  let ended = false;
  const finish = (ending: StreamEnd["ending"]) => {
    if (ended) return;
    ended = true;
    decoder.end();
    options.onEnd({ usage: tap.result(), ending, dataBytes });
  };

  /** Set when the client went away: from then on only `drain` consumes the upstream. */
  let clientGone = false;
  /**
   * The read under way. A wait that gives up (silence) leaves it here for the next
   * wait instead of orphaning it, so no chunk is ever read and then dropped.
   */
  let inflight: Promise<ReadResult> | undefined = first ? Promise.resolve(first) : undefined;

  /** Reads one chunk, or reports silence longer than `ms`. */
  const readWithin = async (ms: number): Promise<ReadResult | "idle"> => {
    const read = (inflight ??= reader.read());
    let timer: ReturnType<typeof setTimeout> | undefined;
    const idle = new Promise<"idle">((resolve) => {
      timer = setTimeout(() => resolve("idle"), ms);
    });
    try {
      const result = await Promise.race([read, idle]);
      if (result !== "idle" && inflight === read) inflight = undefined;
      return result;
    } catch (error) {
      if (inflight === read) inflight = undefined;
      throw error;
    } finally {
      clearTimeout(timer);
    }
  };

  const drain = async () => {
    const deadline = Date.now() + options.drainMs;
    try {
      for (;;) {
        const left = deadline - Date.now();
        if (left <= 0) break;
        const result = await readWithin(left);
        if (result === "idle" || result.done) break;
        decoder.push(result.value);
      }
    } catch {
      // The upstream failed while draining: meter what was seen.
    }
    pending = [];
    options.abortUpstream();
    finish("client_gone");
  };

  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          for (;;) {
            const result = await readWithin(options.idleMs);
            // The client left while this read was pending: `drain` shares the same read
            // and meters it; nothing may be enqueued on the cancelled stream.
            if (clientGone) return;
            if (result === "idle") {
              options.abortUpstream();
              controller.enqueue(streamErrorEvent(options.family, streamTimeout(Math.round(options.idleMs / 1000))));
              controller.close();
              finish("timeout");
              return;
            }
            if (result.done) {
              decoder.push(new Uint8Array(0));
              for (const chunk of pending) controller.enqueue(chunk);
              pending = [];
              controller.close();
              finish("complete");
              return;
            }
            decoder.push(result.value);
            if (!options.hideUsageChunk) {
              controller.enqueue(result.value);
              return;
            }
            if (pending.length > 0) {
              for (const chunk of pending) controller.enqueue(chunk);
              pending = [];
              return;
            }
            // The chunk held no complete event yet: read on before yielding.
          }
        } catch {
          if (ended || clientGone) return;
          controller.enqueue(streamErrorEvent(options.family, streamBroken()));
          controller.close();
          finish("broken");
        }
      },
      cancel() {
        clientGone = true;
        if (!ended) void drain();
      },
    },
    { highWaterMark: 0 },
  );
}
