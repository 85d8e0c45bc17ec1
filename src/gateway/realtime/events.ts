import type { HttpError } from "../../core/errors.ts";
import { randomBase62 } from "../../core/ids.ts";

/**
 * A close code one side reported, turned into one the other side may send (RFC 6455):
 * 1005 (no code given) becomes 1000; 1006 (dropped without a Close frame), 1015 (TLS
 * failure) and anything unsendable become 1011.
 */
export function sendableCloseCode(code: number): number {
  if (code === 1005) return 1000;
  if ((code >= 1000 && code <= 1014 && code !== 1004 && code !== 1006) || (code >= 3000 && code <= 4999)) return code;
  return 1011;
}

/** Close reasons are limited to 123 bytes of UTF-8. */
export function closeReason(reason: string): string {
  const bytes = new TextEncoder().encode(reason);
  if (bytes.byteLength <= 123) return reason;
  let cut = 123;
  // Do not split a multi-byte character.
  while (cut > 0 && (bytes[cut]! & 0xc0) === 0x80) cut--;
  return new TextDecoder().decode(bytes.subarray(0, cut));
}

/** An OpenAI-style realtime `error` event, as the SDKs parse it. */
export function errorEvent(type: string, code: string | null, message: string): string {
  return JSON.stringify({
    type: "error",
    event_id: `event_router_${randomBase62(16)}`,
    error: { type, code, message, param: null, event_id: null },
  });
}

/** Why a session ends when the next response is refused: the error event and the close. */
export interface Refusal {
  event: string;
  code: number;
  reason: string;
}

/**
 * A refused re-admission (credit exhausted, a spend limit or a window reached) as an
 * error event of type `insufficient_credit` or `rate_limit_exceeded`, closing with 1008.
 */
export function refusalOf(error: HttpError): Refusal {
  const code = error.code ?? null;
  if (code === "insufficient_credit") {
    return { event: errorEvent("insufficient_credit", code, error.message), code: 1008, reason: "insufficient credit" };
  }
  if (error.kind === "rate_limit") {
    return { event: errorEvent("rate_limit_exceeded", code, error.message), code: 1008, reason: closeReason(`limit reached: ${code ?? "rate limit"}`) };
  }
  return {
    event: errorEvent(error.kind === "invalid_request" ? "invalid_request_error" : "server_error", code, error.message),
    code: 1008,
    reason: closeReason(`session refused: ${code ?? error.kind}`),
  };
}
