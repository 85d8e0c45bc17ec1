import type { Clock } from "../core/clock.ts";
import { badRequest, causeMessage, conflict, HttpError } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import type { Sealer } from "../store/crypto.ts";
import { IDEMPOTENCY_TTL_MS, type IdempotencyRow, type Store } from "../store/store.ts";
import type { Authenticator } from "./auth.ts";
import { isWrite } from "../wire/resend.ts";
import { readBodyBytes } from "./body.ts";
import type { ServeConfig } from "../config.ts";

/** What a replayed answer carries, as Stripe names it. */
export const REPLAYED_HEADER = "idempotent-replayed";

import { FINGERPRINT_PURPOSE, REWRAPPED, rewrapFingerprint } from "../store/rekey/fingerprint.ts";

/** 1 to 255 visible ASCII characters (a UUID, a payment event's id, an order number). */
const VALID_KEY = /^[\x21-\x7e]{1,255}$/;

export interface IdempotencyDeps {
  store: Pick<Store, "idempotency">;
  auth: Authenticator;
  clock: Clock;
  log: Logger;
  /** Seals the answers kept (a provider key's record holds its secret), and keys the requests' fingerprints. */
  sealer: Sealer;
  /** The management API's error answer for a refusal (its envelope, its accounting). */
  refuse(error: HttpError, request: Request, path: string): Response;
  /** The body size limit (`--max-body`): the fingerprint reads no more of a body than the route would. */
  config: Pick<ServeConfig, "maxBody">;
}

/**
 * Management writes sent with an `Idempotency-Key` header run once per account and key
 * (docs/api.md, "Idempotent writes"): the first claims the key in the store (one row, so
 * every instance on the database sees the claim), runs, and leaves its answer there; a
 * retry of the same request within a day gets that answer again, with `Idempotent-Replayed:
 * true`, and writes nothing. The same key with another request is 422, and with one
 * still running (or whose process stopped before answering) 409. An answer holding an
 * API key is not kept (keys are stored only as hashes): its retries are told that. The
 * answers kept are sealed at rest like provider secrets: a provider key's record holds one;
 * the requests are known by a fingerprint keyed with the deployment's secret, never a plain hash.
 * A server-side failure (5xx) or a 429 gives the key up, so the retry runs the request again.
 *
 * Model calls are not covered (the `/x-` paths are the management API), and neither are
 * requests without a valid key of the router's: their route refuses them as before.
 */
export function createIdempotency(deps: IdempotencyDeps) {
  // Derived once: HKDF per request would be wasted work for the same key.
  const fingerprintKey = deps.sealer.derivedKey(FINGERPRINT_PURPOSE);
  // With a fallback key (a rotation under way), fingerprints keyed with it are recognised too.
  const fallbackFingerprintKeys = deps.sealer.derivedKeys(FINGERPRINT_PURPOSE).slice(1);
  /** Whether a claim's fingerprint is this request's, in any form a router wrote it (see sameRequest). */
  const isThisRequest = (held: string, request: FingerprintInput, fingerprint: string) =>
    sameRequest(held, [fingerprint, ...fallbackFingerprintKeys.map((key) => keyedFingerprint(request, key)), unkeyedFingerprint(request)], fingerprintKey);
  const keyChanged = () => notKept("can no longer be read (the deployment's secret key changed)");
  /** Whether a kept answer was sealed under another secret key (the deployment's was replaced). */
  const sealedElsewhere = (held: IdempotencyRow) => {
    if (held.body === null) return false;
    try {
      deps.sealer.open(held.body);
      return false;
    } catch {
      return true;
    }
  };
  const replay = (held: IdempotencyRow): Response | HttpError => {
    let body: string | null = null;
    try {
      body = held.body === null ? null : deps.sealer.open(held.body);
    } catch {
      // Sealed under another secret key (the deployment's was replaced): as good as not kept.
      return keyChanged();
    }
    const headers: Record<string, string> = { [REPLAYED_HEADER]: "true" };
    if (held.contentType) headers["content-type"] = held.contentType;
    return new Response(body, { status: held.status, headers });
  };
  const notKept = (why: string) => conflict(`The request with this Idempotency-Key was carried out; its answer ${why}`, undefined, "idempotency_answer_not_kept");

  /** The answer to a request whose key another request holds. */
  const heldAnswer = (held: IdempotencyRow, request: FingerprintInput, fingerprint: string): Response | HttpError => {
    if (!isThisRequest(held.fingerprint, request, fingerprint)) {
      // A fingerprint keyed with the deployment's previous secret key differs from any this
      // one computes: when the kept answer cannot be opened either, say so, not "another request".
      if (sealedElsewhere(held)) return keyChanged();
      // Rewrapped by `router rekey` from a key this instance no longer has: which request it was cannot be told.
      if (held.fingerprint.startsWith(REWRAPPED)) return notKept("can no longer be matched to its request (the deployment's secret key was rotated since): check its effect, then use a new key");
      return new HttpError("invalid_request", "This Idempotency-Key was used for a different request (method, path or body) within the last 24 hours; use a new key", {
        status: 422,
        code: "idempotency_key_reused",
      });
    }
    if (held.status === 0) {
      return conflict(
        "A request with this Idempotency-Key has not finished: retry in a moment. If this persists, the instance that ran it stopped before answering and its outcome is unknown: check its effect, then use a new key",
        undefined,
        "idempotency_key_in_use",
      );
    }
    if (held.secret) return notKept("held an API key, which is shown only once and was not kept");
    return replay(held);
  };

  const giveUp = (accountId: number, key: string) =>
    deps.store.idempotency.release(accountId, key).catch((error: unknown) => deps.log.error("an Idempotency-Key could not be given up; its retries get 409 until it expires", { error: causeMessage(error) }));

  return async function handle(request: Request, path: string, next: (request: Request) => Promise<Response>): Promise<Response> {
    const key = request.headers.get("idempotency-key");
    if (key === null || !isWrite(request.method) || !path.startsWith("/x-")) return next(request);
    // No caller to scope the key to (no key, an unknown one, one in the URL): the route
    // refuses it (401) as without the header, before anything is said of the header itself;
    // sign-up, which takes no API key, runs as without it.
    const principal = await deps.auth.optional(request, "openai").catch(() => undefined);
    if (!principal) return next(request);
    if (!VALID_KEY.test(key)) return deps.refuse(badRequest("Idempotency-Key must be 1 to 255 visible ASCII characters", "Idempotency-Key", "invalid_idempotency_key"), request, path);
    const accountId = principal.account.id;
    // A body past --max-body is refused here as the route would (413), without reading it whole.
    const input = await fingerprintInput(request, deps.config.maxBody);
    const fingerprint = keyedFingerprint(input, fingerprintKey);
    const now = deps.clock.now();
    const held = await deps.store.idempotency.claim({ accountId, key, fingerprint, createdAt: now }, now - IDEMPOTENCY_TTL_MS);
    if (held) {
      const answer = heldAnswer(held, input, fingerprint);
      return answer instanceof HttpError ? deps.refuse(answer, request, path) : answer;
    }
    let response: Response;
    try {
      response = await next(request);
    } catch (error) {
      await giveUp(accountId, key);
      throw error;
    }
    // Nothing was carried out, and the client is told to come back: a kept answer would refuse every retry for a day.
    if (response.status >= 500 || response.status === 429) {
      await giveUp(accountId, key);
      return response;
    }
    const body = await response.text();
    const contentType = response.headers.get("content-type");
    const secret = holdsApiKey(body);
    try {
      await deps.store.idempotency.complete(accountId, key, { status: response.status, contentType, body: secret ? null : deps.sealer.seal(body), secret });
    } catch (error) {
      // The write happened: the client gets its answer; a retry is told the outcome is unknown.
      deps.log.error("the answer of a request with an Idempotency-Key could not be kept; its retries get 409 until it expires", { error: causeMessage(error) });
    }
    return new Response(body, { status: response.status, headers: response.headers });
  };
}

/** What a request's fingerprint covers: its method, its path with the query, and its body. */
interface FingerprintInput {
  head: string;
  body: Uint8Array;
}

async function fingerprintInput(request: Request, maxBody: number): Promise<FingerprintInput> {
  const url = request.url;
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  // A copy: the route reads the request's own body.
  return { head: `${request.method} ${pathStart < 0 ? "/" : url.slice(pathStart)}\n`, body: await readBodyBytes(request.clone(), maxBody) };
}

/**
 * HMAC-SHA-256 of the method, the path with its query, and the body, keyed by a key
 * derived from the deployment's sealing key. The bodies can hold secrets (EMAIL_PASS in
 * PUT /x-config, SecretKey in PUT /x-keys) and the fingerprint is stored for a day: a
 * plain hash would let whoever holds a copy of the database (a backup, `router
 * migrate-data`'s source) confirm guesses at a password offline, or finish a provider
 * secret from its PartialKey tail. Keyed, it is worthless without secret.key, which
 * never enters the database.
 */
function keyedFingerprint(input: FingerprintInput, key: Uint8Array): string {
  return new Bun.CryptoHasher("sha256", key).update(input.head).update(input.body).digest("hex");
}

/**
 * Whether a stored fingerprint is one of `candidates` (this request's, keyed with each key
 * the instance has, and the unkeyed form), as written, or as `router rekey` rewrapped it
 * with the instance's sealing key (store/rekey/fingerprint.ts).
 */
function sameRequest(held: string, candidates: readonly string[], fingerprintKey: Uint8Array): boolean {
  if (!held.startsWith(REWRAPPED)) return candidates.includes(held);
  return candidates.some((candidate) => rewrapFingerprint(candidate, fingerprintKey) === held);
}

/**
 * The plain SHA-256 that routers before the keyed fingerprint stored. Compared only when
 * a claim is found and the keyed form differs: a claim made just before an upgrade (kept
 * 24 hours) must still replay its retry instead of refusing it as another request. It
 * weakens nothing: only rows written before the upgrade hold this form, and they expire.
 */
function unkeyedFingerprint(input: FingerprintInput): string {
  return new Bun.CryptoHasher("sha256").update(input.head).update(input.body).digest("hex");
}

/** Whether an answer holds a new API key (an account created, a key rotated, a sign-up confirmed). */
function holdsApiKey(body: string): boolean {
  if (!body.includes('"APIKey"')) return false;
  try {
    const parsed = JSON.parse(body) as unknown;
    return typeof parsed === "object" && parsed !== null && typeof (parsed as { APIKey?: unknown }).APIKey === "string";
  } catch {
    return false;
  }
}
