/**
 * A translated stream, byte level: the upstream's SSE bytes in, the client format's
 * events out. The relay (`stream.ts`) keeps reading, timing and metering the upstream's
 * bytes as for any stream and writes what this makes of them instead of the bytes.
 */
import type { HttpError } from "../core/errors.ts";
import { concatBytes } from "../core/bytes.ts";
import { createSseDecoder } from "../formats/sse.ts";
import type { StreamTranslator } from "../formats/translate/translator.ts";

export interface StreamRewrite {
  /** The client's bytes for the next upstream bytes (often none: not every event makes one). */
  push(bytes: Uint8Array): Uint8Array;
  /** The upstream ended normally: the client's closing events. */
  end(): Uint8Array;
  /** The stream failed: the client format's terminal error event. */
  fail(error: HttpError): Uint8Array;
  /** Whether an upstream event under way grew past the bound: it cannot be translated, so the stream must end. */
  dropping(): boolean;
}

/** `maxEventChars`: the most of one upstream event held for the translator (see `createSseDecoder`). */
export function rewriteStream(translator: StreamTranslator, maxEventChars?: number): StreamRewrite {
  let out: Uint8Array[] = [];
  let size = 0;
  const decoder = createSseDecoder((event) => {
    const bytes = translator.push(event);
    if (bytes.byteLength === 0) return;
    out.push(bytes);
    size += bytes.byteLength;
  }, maxEventChars);
  const take = (): Uint8Array => {
    const joined = out.length === 1 ? out[0]! : concatBytes(out, size);
    out = [];
    size = 0;
    return joined;
  };
  return {
    push(bytes) {
      decoder.push(bytes);
      return take();
    },
    end() {
      decoder.end();
      const last = take();
      const closing = translator.end();
      return last.byteLength === 0 ? closing : concatBytes([last, closing], last.byteLength + closing.byteLength);
    },
    fail: (error) => translator.fail(error),
    dropping: () => decoder.dropping(),
  };
}
