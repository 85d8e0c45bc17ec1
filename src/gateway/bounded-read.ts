import { concatBytes } from "../core/bytes.ts";

/**
 * An upstream body read whole (a JSON answer, a relayed error), within a size and a
 * silence bound: an upstream (or a gzip bomb it sends: fetch inflates as it reads)
 * must not make the router hold gigabytes, nor hold a call and its key forever by
 * sending headers and then nothing.
 */

/** The default bound of an answer read whole: past the largest real ones (embeddings of 2,048 inputs, ten images as base64). */
export const DEFAULT_MAX_ANSWER_BYTES = 256 * 1024 * 1024;
/** An upstream's error body is relayed up to this size; a larger one is replaced by words of the router's own. */
export const MAX_ERROR_BODY_BYTES = 1024 * 1024;

/**
 * The body's bytes, or `undefined` as soon as more than `maxBytes` arrived (the rest is
 * not read: the body is cancelled). After `idleMs` without a chunk, `onIdle` is called;
 * it must cut the connection (abort the fetch), which makes the pending read throw, and
 * that error is this read's. Per chunk: one length sum and one clock read; one timer per body.
 */
export async function readBounded(body: ReadableStream<Uint8Array> | null, maxBytes: number, idleMs: number, onIdle: () => void): Promise<Uint8Array | undefined> {
  if (!body) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let lastChunkAt = Date.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  // As in the stream relay: a chunk only notes its time, the timer waits out the rest when it fires early.
  const watch = (ms: number) => {
    timer = setTimeout(() => {
      const quiet = Date.now() - lastChunkAt;
      if (quiet < idleMs) watch(idleMs - quiet);
      else onIdle();
    }, ms);
  };
  watch(idleMs);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return concatBytes(chunks, size);
      lastChunkAt = Date.now();
      size += value.byteLength;
      if (size > maxBytes) {
        reader.cancel().catch(() => {});
        return undefined;
      }
      chunks.push(value);
    }
  } finally {
    clearTimeout(timer);
  }
}
