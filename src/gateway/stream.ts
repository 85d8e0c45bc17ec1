import type { Family } from "../formats/family.ts";
import { createSseDecoder, type SseEvent } from "../formats/sse.ts";
import { streamBroken, streamTimeout } from "./stream-events.ts";
import { formatOf } from "../formats/registry.ts";
import { countContent } from "./usage/content-count.ts";
import { earliest, HAS_USAGE_OBJECT } from "../formats/json.ts";
import { failureAt, reportsFailure } from "../formats/stream-failure.ts";
import type { Usage } from "../formats/usage.ts";
import type { ReadResult } from "./call-outcome.ts";
import type { StreamRewrite } from "./translated-stream.ts";

/** How a relayed stream ended, for metering. */
export interface StreamEnd {
  usage: Usage | undefined;
  /** Calls billed per call the stream's items showed (StreamUsageTap.calls), for a stream that reported no usage. */
  calls?: Pick<Usage, "webSearches" | "fileSearches">;
  /** `complete`: the upstream finished; `client_gone`: the client left (upstream drained); `timeout`/`broken`: ended by an error event. */
  ending: "complete" | "client_gone" | "timeout" | "broken";
  /** The upstream reported a failure in one of its events (its stream then ended short of its answer). */
  failed: boolean;
  /** Bytes of event data seen. */
  dataBytes: number;
  /** Bytes of generated content seen (text, tool arguments, reasoning; not the framing), for estimating usage the upstream did not report. */
  contentBytes: number;
}

export interface StreamOptions {
  family: Family;
  /** Drop the usage-only chunk the router asked for on the client's behalf (OpenAI chat). */
  hideUsageChunk: boolean;
  /** Longest silence between upstream chunks before the stream is ended with an error event. */
  idleMs: number;
  /** After the client leaves, how long to keep reading the upstream for its usage report. */
  drainMs: number;
  /** Characters the usage decoder holds for one event: a longer one still reaches the client, but is not read. */
  maxEventChars?: number;
  /** Cuts the upstream connection. */
  abortUpstream(): void;
  /** Sees every decoded event (e.g. to learn a created object's id). */
  watch?: (event: SseEvent) => void;
  /**
   * A translated stream: what the client receives in place of the upstream's bytes
   * (`family` stays the upstream's, whose tap meters the call).
   */
  rewrite?: StreamRewrite;
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

/** The client's stream, and how it ended once it has. */
export interface RelayedStream {
  body: ReadableStream<Uint8Array>;
  ended: Promise<StreamEnd>;
}

/** The writer side of Bun's `direct` ReadableStream (not in the DOM typings). */
interface DirectController {
  write(chunk: Uint8Array): number | Promise<number>;
  close(error?: Error): void;
}

/**
 * Relays an upstream SSE body to the client chunk by chunk as it arrives, reading
 * usage on the side with a real SSE decoder. If the client leaves, the upstream is
 * still read (for at most `drainMs`) so the call is metered with the usage the
 * upstream reports, not a guess.
 *
 * `first` is the body's first read, already awaited by the relay (under the
 * first-byte limit, so a stream that stalls before its first byte can be retried
 * elsewhere); the idle limit applies between chunks after it.
 *
 * Cost per chunk is what streaming throughput is made of, so:
 * - the upstream's bytes are forwarded as they came, and decoded only from the first
 *   event the usage tap may need; the usage chunk the router asked for is cut out by
 *   its byte span; only a read that ends inside an event, when that chunk must be cut,
 *   is re-encoded event by event;
 * - one timer per stream bounds silence and then the drain, by cutting the upstream,
 *   which ends the pending read; a chunk only notes its time;
 * - a `direct` stream (Bun): one loop writes straight to the socket, with no queue and
 *   no promise per chunk.
 */
export function relayStream(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  first: ReadResult | undefined,
  options: StreamOptions,
): RelayedStream {
  const format = formatOf(options.family);
  const tap = format.streamUsageTap();
  const rewrite = options.rewrite;
  const hide = options.hideUsageChunk && !rewrite;
  let dataBytes = 0;
  let contentBytes = 0;
  let failed = false;
  /** With `hide`: the complete events of the current read, encoded only if the read cannot pass as it came. */
  let events: SseEvent[] = [];
  /** With `hide`: how many usage-only chunks the current read held, and where the last one lies in its text. */
  let cut = 0;
  let cutSpan: [number, number] | undefined;
  const decoder = createSseDecoder((event: SseEvent) => {
    dataBytes += event.data.length;
    tap.onEvent(event);
    if (!failed) failed = reportsFailure(event.data);
    options.watch?.(event);
    if (!hide) return;
    if (isUsageOnlyChunk(event.data)) {
      cut++;
      cutSpan = decoder.span();
    } else events.push(event);
  }, options.maxEventChars);
  let ended = false;
  let announceEnd!: (end: StreamEnd) => void;
  const endPromise = new Promise<StreamEnd>((resolve) => (announceEnd = resolve));
  const finish = (ending: StreamEnd["ending"]) => {
    if (ended) return;
    ended = true;
    decoder.end();
    announceEnd({ usage: tap.result(), calls: tap.calls?.(), ending, failed, dataBytes, contentBytes });
  };

  /** Set when the client went away: the upstream is read on for its usage, nothing is written. */
  let clientGone = false;
  /** Set when the idle limit cut the upstream. */
  let timedOut = false;
  /**
   * One timer bounds silence: a chunk only notes the time, and the timer, when it
   * fires early, waits out the rest. Cheaper than re-arming a timer per chunk.
   */
  let lastChunkAt = Date.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const watchIdle = (ms: number) => {
    timer = setTimeout(() => {
      const quiet = Date.now() - lastChunkAt;
      if (quiet < options.idleMs) return watchIdle(options.idleMs - quiet);
      timedOut = true;
      options.abortUpstream();
    }, ms);
  };
  watchIdle(options.idleMs);

  /**
   * With `hide`: what of one upstream read goes to the client. A read of whole events
   * goes as it came, less the bytes of the usage-only event when it holds that one;
   * a read that ends inside an event is re-encoded event by event.
   */
  const edited = (bytes: Uint8Array): Uint8Array[] => {
    const whole = decoder.atBoundary();
    decoder.push(bytes);
    let out: Uint8Array[] | undefined;
    if (whole && decoder.atBoundary()) {
      if (cut === 0) out = [bytes];
      else if (cut === 1 && cutSpan) out = without(bytes, decoder.text(), cutSpan);
    }
    out ??= events.map(encodeEvent);
    events = [];
    cut = 0;
    cutSpan = undefined;
    return out;
  };

  /**
   * How much of a read can pass without decoding: when the decoder is between events,
   * the read ends with a blank line (so it holds whole events) and nothing watches every
   * event, the whole events before the first one the tap may need (with `hide`, that
   * also rules out the usage chunk). 0 when the read must be decoded from its start.
   */
  const passable = (bytes: Uint8Array): number => {
    if (options.watch !== undefined || !endsBlock(bytes) || !decoder.atBoundary()) return 0;
    // An upstream's own error event is decoded too, so the call is recorded as failed.
    const needed = earliest(tap.firstNeeded(bytes), failureAt(bytes));
    return needed === -1 ? bytes.byteLength : blockStartBefore(bytes, needed);
  };

  const source = {
    type: "direct",
    async pull(direct: DirectController) {
      // A translated stream writes what its rewrite makes of each read, and nothing when that is empty.
      const controller: DirectController = rewrite
        ? {
            write: (chunk) => {
              const out = rewrite.push(chunk);
              // An event past the bound cannot be translated: the stream ends with an error event, not a hole.
              if (rewrite.dropping()) throw new Error("an upstream event past the bound");
              return out.byteLength === 0 ? 0 : direct.write(out);
            },
            close: (error) => direct.close(error),
          }
        : direct;
      let ending: StreamEnd["ending"] = "complete";
      try {
        let result = first ?? (await reader.read());
        while (!result.done) {
          let bytes = result.value;
          contentBytes += countContent(bytes);
          const pass = passable(bytes);
          if (pass > 0) {
            // Whole events that hold nothing the tap needs: counted, not decoded.
            dataBytes += pass;
            if (!clientGone) {
              lastChunkAt = Date.now();
              const written = controller.write(pass === bytes.byteLength ? bytes : bytes.subarray(0, pass));
              if (typeof written !== "number") await written;
            }
            if (pass === bytes.byteLength) {
              result = await reader.read();
              continue;
            }
            bytes = bytes.subarray(pass);
          }
          if (clientGone) decoder.push(bytes);
          else {
            lastChunkAt = Date.now();
            // A promise from write means the socket is backed up: wait, so a slow client holds no unbounded buffer.
            if (!hide) {
              decoder.push(bytes);
              const written = controller.write(bytes);
              if (typeof written !== "number") await written;
            } else {
              for (const chunk of edited(bytes)) {
                const written = controller.write(chunk);
                if (typeof written !== "number") await written;
              }
              // An event past the decoder's bound cannot be re-encoded for the client: the
              // stream ends with an error event rather than with a silent hole in it.
              if (decoder.dropping()) throw new Error("an upstream event past the bound");
            }
          }
          result = await reader.read();
        }
      } catch {
        ending = timedOut ? "timeout" : "broken";
      } finally {
        clearTimeout(timer);
      }
      if (clientGone) {
        options.abortUpstream();
        finish("client_gone");
        return;
      }
      try {
        if (ending !== "complete") {
          options.abortUpstream();
          const error = ending === "timeout" ? streamTimeout(Math.round(options.idleMs / 1000)) : streamBroken();
          direct.write(rewrite ? rewrite.fail(error) : format.streamErrorEvent(error));
        } else if (rewrite) {
          const closing = rewrite.end();
          if (closing.byteLength > 0) direct.write(closing);
        }
        direct.close();
      } catch {
        // The client left while the last bytes were written.
      }
      finish(clientGone ? "client_gone" : ending);
    },
    cancel() {
      if (ended || clientGone) return;
      clientGone = true;
      // From now on the timer is the drain's deadline.
      clearTimeout(timer);
      timer = setTimeout(() => options.abortUpstream(), options.drainMs);
    },
  };
  return { body: new ReadableStream(source as unknown as UnderlyingDefaultSource<Uint8Array>), ended: endPromise };
}

const utf8 = new TextDecoder();

/**
 * Where the event holding offset `at` begins: just after the last blank line before it
 * (`\n\n` or `\r\n\r\n`), or 0.
 */
function blockStartBefore(bytes: Uint8Array, at: number): number {
  for (let i = at - 1; i >= 1; i--) {
    if (bytes[i] === 0x0a && (bytes[i - 1] === 0x0a || (i >= 3 && bytes[i - 1] === 0x0d && bytes[i - 2] === 0x0a && bytes[i - 3] === 0x0d))) return i + 1;
  }
  return 0;
}

/** Whether bytes end with the blank line that closes an event (`\n\n` or `\r\n\r\n`). */
function endsBlock(bytes: Uint8Array): boolean {
  const n = bytes.byteLength;
  if (n < 2 || bytes[n - 1] !== 0x0a) return false;
  if (bytes[n - 2] === 0x0a) return true;
  return n >= 4 && bytes[n - 2] === 0x0d && bytes[n - 3] === 0x0a && bytes[n - 4] === 0x0d;
}

/**
 * `bytes` without the block at [start, end) of their decoded `text`; undefined when the
 * byte offsets do not match the text (a byte-order mark the decoder dropped).
 */
function without(bytes: Uint8Array, text: string, [start, end]: [number, number]): Uint8Array[] | undefined {
  const from = Buffer.byteLength(text.slice(0, start));
  const to = from + Buffer.byteLength(text.slice(start, end));
  if (to > bytes.byteLength || utf8.decode(bytes.subarray(from, to)) !== text.slice(start, end)) return undefined;
  return [bytes.subarray(0, from), bytes.subarray(to)].filter((part) => part.byteLength > 0);
}

/** One event as SSE bytes (`event:` and `data:` lines). */
function encodeEvent(event: SseEvent): Uint8Array {
  const head = event.event ? `event: ${event.event}\n` : "";
  return encoder.encode(`${head}data: ${event.data.replace(/\n/g, "\ndata: ")}\n\n`);
}
