import { redact, redactSecret } from "../core/redact.ts";
import { MAX_MESSAGE } from "../metering/request-log.ts";

/** What of a failed attempt's error body is read: enough for its message, never a wait on a slow body. */
const READ_BYTES = 4096;
const READ_MS = 1000;

/**
 * The start of an upstream's error body for the request log, without the key's secret
 * in any spelling and without anything secret-shaped; the rest of the body is dropped.
 * Read up to 4 KB and cut to 500 characters after redaction, so a secret the 4 KB cut
 * splits in two lies far beyond what is kept.
 */
export async function errorMessage(response: Response, secret: string | readonly string[]): Promise<string | undefined> {
  const reader = response.body?.getReader();
  if (!reader) return undefined;
  const chunks: Uint8Array[] = [];
  let size = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), READ_MS);
  });
  try {
    while (size < READ_BYTES) {
      const next = await Promise.race([reader.read(), deadline]);
      if (!next || next.done) break;
      chunks.push(next.value);
      size += next.value.byteLength;
    }
  } catch {
    // A body that breaks off leaves what was read.
  } finally {
    clearTimeout(timer);
    reader.cancel().catch(() => {});
  }
  const text = Buffer.concat(chunks).subarray(0, READ_BYTES).toString("utf8").trim();
  return text ? redact(redactSecret(text, secret)).slice(0, MAX_MESSAGE) : undefined;
}

/** A connection error's message for the request log (addresses stay; anything secret-shaped goes). */
export const failureMessage = (error: unknown): string => redact(String((error as Error)?.message ?? error)).slice(0, MAX_MESSAGE);
