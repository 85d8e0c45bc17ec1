import type { Family } from "../formats/family.ts";
import { stringifyBody } from "../formats/held-json.ts";
import type { PoolKey } from "../routing/pool-key.ts";

/** One call as the gateway hands it to an upstream adapter. */
export interface UpstreamCall {
  family: Family;
  method: string;
  /** Canonical client path, e.g. `/v1/chat/completions`, `/v1/messages`, `/v1beta/models/m:generateContent`. */
  path: string;
  /** Query string to forward, `?…` or empty; credentials never appear here. */
  search: string;
  /** Effective model (after MODEL_MAPPER), when the call has one. */
  model: string | undefined;
  stream: boolean;
  /** The JSON body, already carrying the effective model; undefined for non-JSON bodies. */
  json: Record<string, unknown> | undefined;
  /** The original body bytes when the router did not edit it: sent as they came. */
  bytes: Uint8Array | undefined;
  /** A spooled multipart body on disk, streamed from there (its content-type header carries the boundary). */
  file?: string;
  /** Client headers safe to forward (credentials and hop-by-hop already removed). */
  headers: Headers;
  /**
   * The router put `stream_options` in the body itself (the client sent none), to meter
   * the stream: an upstream that refuses the member gets the body without it, and the
   * call is then charged an estimate.
   */
  addedStreamOptions?: boolean;
  /** The body is the router's own translation of the client's request, not the client's words. */
  translated?: boolean;
}

export interface PreparedRequest {
  url: string;
  headers: Headers;
  body: Uint8Array | string | Blob | null;
  /**
   * Credentials sent besides the key's secret (an access token minted from it): an
   * upstream may echo them as it may the secret, so they are redacted the same way.
   */
  credentials?: readonly string[];
}

/** One upstream scheme (standard, azure, vertex): where a call goes and how it authenticates. */
export interface UpstreamAdapter {
  /** Whether a key of this type can serve the call at all (e.g. Azure serves only OpenAI paths). */
  supports(call: UpstreamCall): boolean;
  /**
   * `signal` is the attempt's: a credential the adapter must fetch first (a Vertex token)
   * is waited for no longer than the attempt itself (its first-byte limit, its client).
   */
  prepare(key: PoolKey, call: UpstreamCall, signal?: AbortSignal): Promise<PreparedRequest>;
  /**
   * For a call `supports` turns down, why, when the client should be told (the upstream
   * has no such API at all): the call's 400 if no other key takes it.
   */
  refusal?(call: UpstreamCall): string | undefined;
  /**
   * Called when the upstream answered 401; returns true when fresh credentials will be
   * used (a refreshed access token), so the same key deserves one more try. `sent`: the
   * `credentials` the refused request carried.
   */
  refreshCredentials?(key: PoolKey, sent: readonly string[] | undefined): boolean;
  /**
   * The key test's check of a credential the adapter exchanges itself (a Vertex token):
   * made afresh, not answered from a cache. Throws what `prepare` would.
   */
  verify?(key: PoolKey): Promise<void>;
}

/**
 * An adapter's own credential exchange was refused (a Vertex service account whose key
 * was deleted or rotated: Google's `invalid_grant`): the key's fault, as a 401 is, not a
 * passing failure. Nothing was sent to the model, and asking again cannot help.
 */
export class CredentialRefusedError extends Error {
  constructor(
    message: string,
    /** The status the credential endpoint answered with. */
    readonly status: number,
  ) {
    super(message);
  }
}

/** `promise`, or the signal's reason once it aborts first; the work behind the promise goes on for whoever else waits on it. */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) {
    // Nobody here waits for the work any more, but it goes on: its failure must still be
    // observed, or Bun ends the process on the unhandled rejection.
    promise.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** The body to send: the original bytes when unedited, else the edited JSON. */
export function bodyOf(call: UpstreamCall): Uint8Array | string | Blob | null {
  if (call.file) return Bun.file(call.file);
  if (call.bytes && call.bytes.byteLength > 0) return call.bytes;
  return call.json ? stringifyBody(call.json) : null;
}
