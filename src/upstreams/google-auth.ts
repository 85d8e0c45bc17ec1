/**
 * Google service-account authentication for Vertex AI upstreams.
 *
 * A service-account key file is exchanged for a short-lived OAuth2 access token
 * using the JWT bearer grant (RFC 7523): a JWT signed RS256 with the account's
 * private key is POSTed to the token endpoint. Tokens are cached until shortly
 * before they expire, and concurrent callers share one in-flight exchange.
 *
 * Neither the private key nor the signed assertion ever appears in an error message.
 */
import { AddressRefusedError } from "./address-policy.ts";
import { CredentialRefusedError } from "./types.ts";
import { createPrivateKey, sign, type KeyObject } from "node:crypto";

export interface ServiceAccount {
  client_email: string;
  private_key: string;
  project_id?: string;
  token_uri?: string;
  private_key_id?: string;
}

export interface AccessTokenProvider {
  /** A valid access token, fetched on first use and cached until shortly (60 s) before expiry; concurrent callers share one in-flight exchange. */
  token(): Promise<string>;
  /**
   * Forget the cached token (called when the upstream answered 401), so the next token()
   * exchanges again. With `stale`, the token the 401 answered: forgotten only while it is
   * still the cached one, so calls that all got a 401 for it share one fresh token
   * instead of each cancelling the exchange the one before started.
   */
  invalidate(stale?: string): void;
  /**
   * Exchanges now, whatever is cached (the key test: a cached token proves nothing about
   * the account today). The answer replaces the cached token only when it is one; a
   * refusal leaves calls their token until it expires or is refused.
   */
  fresh(): Promise<string>;
}

export interface TokenProviderOptions {
  account: ServiceAccount;
  /** Token endpoint; default account.token_uri ?? "https://oauth2.googleapis.com/token". */
  tokenUri?: string;
  /** Injectable for tests. */
  fetch?: typeof fetch;
  /** Milliseconds since the epoch; injectable clock. */
  now?: () => number;
  /** Extra fetch options, e.g. { tls: { ca: [...] } } for a test CA. */
  fetchInit?: BunFetchRequestInit;
  /** The upstream address policy: why the token URI's host may not be reached, or undefined. */
  checkUrl?: (url: string) => Promise<string | undefined>;
}

export const DEFAULT_TOKEN_URI = "https://oauth2.googleapis.com/token";
export const CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform";
const JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/** Lifetime requested for the signed assertion (Google's maximum). */
const ASSERTION_LIFETIME_S = 3600;
/** A cached token is considered stale this long before its stated expiry. */
const EXPIRY_MARGIN_MS = 60_000;
/** Applied when fetchInit carries no signal of its own, so a hung endpoint cannot stall every request forever. */
const DEFAULT_EXCHANGE_TIMEOUT_MS = 30_000;
/** Upper bound on how much of Google's error text is quoted in an error message. */
const MAX_QUOTED_CHARS = 300;

// ---------------------------------------------------------------------------
// Service-account key file
// ---------------------------------------------------------------------------

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function optionalString(raw: Record<string, unknown>, field: string): string | undefined {
  const value = raw[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw new Error(`service account: "${field}" must be a string`);
  return value;
}

/** Key files pasted through environment variables sometimes carry literal "\n" sequences instead of newlines. */
function normalisePem(pem: string): string {
  return !pem.includes("\n") && pem.includes("\\n") ? pem.replace(/\\n/g, "\n") : pem;
}

/** Loads an RSA private key; the error never quotes the key. */
function loadRsaPrivateKey(pem: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: "pem" });
  } catch {
    throw new Error(`service account: "private_key" is not a valid PEM private key`);
  }
  if (key.asymmetricKeyType !== "rsa") {
    throw new Error(`service account: "private_key" must be an RSA key (got ${key.asymmetricKeyType ?? "unknown"})`);
  }
  return key;
}

/**
 * The token URI receives the signed JWT assertion, a credential that buys access tokens
 * for its lifetime (an hour): over plain http anyone on the path could replay it. So only
 * https, as for `config.token_uri` (docs/api.md), both when a key file is saved and before
 * an exchange (a key file stored before this rule is refused then, never sent in clear).
 */
function checkTokenUri(uri: string, what: string): void {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new Error(`${what} is not a valid URL`);
  }
  if (url.protocol !== "https:") {
    throw new Error(`${what} must be an https:// URL (got ${url.protocol.slice(0, 20)}): the signed assertion sent there must not travel in clear`);
  }
}

/** Parses and checks a service-account JSON key file as Google issues it (type "service_account"); throws Error with a message naming the missing/invalid field, never including the private key. */
export function parseServiceAccount(json: string): ServiceAccount {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    // The parser's own message may quote the input, which holds the private key.
    throw new Error("service account: key file is not valid JSON");
  }
  if (!isRecord(raw)) throw new Error("service account: key file must be a JSON object");

  const type = raw.type;
  if (type === undefined) throw new Error(`service account: missing "type" (expected "service_account")`);
  if (type !== "service_account") {
    const shown = typeof type === "string" ? JSON.stringify(type.slice(0, 40)) : typeof type;
    throw new Error(`service account: "type" must be "service_account", got ${shown}`);
  }

  const clientEmail = raw.client_email;
  if (clientEmail === undefined || clientEmail === null || clientEmail === "") {
    throw new Error(`service account: missing "client_email"`);
  }
  if (typeof clientEmail !== "string" || !/^[^\s@]+@[^\s@]+$/.test(clientEmail)) {
    throw new Error(`service account: "client_email" must be an e-mail address`);
  }

  const privateKeyRaw = raw.private_key;
  if (privateKeyRaw === undefined || privateKeyRaw === null || privateKeyRaw === "") {
    throw new Error(`service account: missing "private_key"`);
  }
  if (typeof privateKeyRaw !== "string") throw new Error(`service account: "private_key" must be a string`);
  const privateKey = normalisePem(privateKeyRaw);
  loadRsaPrivateKey(privateKey);

  const account: ServiceAccount = { client_email: clientEmail, private_key: privateKey };
  const projectId = optionalString(raw, "project_id");
  if (projectId !== undefined && projectId !== "") account.project_id = projectId;
  const tokenUri = optionalString(raw, "token_uri");
  if (tokenUri !== undefined && tokenUri !== "") {
    checkTokenUri(tokenUri, `service account: "token_uri"`);
    account.token_uri = tokenUri;
  }
  const privateKeyId = optionalString(raw, "private_key_id");
  if (privateKeyId !== undefined && privateKeyId !== "") account.private_key_id = privateKeyId;
  return account;
}

// ---------------------------------------------------------------------------
// JWT assertion
// ---------------------------------------------------------------------------

function base64url(data: string | Uint8Array): string {
  return Buffer.from(data).toString("base64url");
}

function signAssertion(account: ServiceAccount, key: KeyObject, audience: string, nowMs: number): string {
  const header: Record<string, string> = { alg: "RS256", typ: "JWT" };
  if (account.private_key_id) header.kid = account.private_key_id;
  const iat = Math.floor(nowMs / 1000);
  const claims = {
    iss: account.client_email,
    scope: CLOUD_PLATFORM_SCOPE,
    aud: audience,
    iat,
    exp: iat + ASSERTION_LIFETIME_S,
  };
  const signingInput = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(claims))}`;
  const signature = sign("sha256", Buffer.from(signingInput), key);
  return `${signingInput}.${base64url(signature)}`;
}

// ---------------------------------------------------------------------------
// Token exchange
// ---------------------------------------------------------------------------

interface CachedToken {
  value: string;
  /** Epoch ms after which the token is no longer handed out. */
  staleAt: number;
}

/** Shortens and scrubs text quoted from the token endpoint. */
function quote(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret) out = out.split(secret).join("[redacted]");
  }
  out = out.replace(/\s+/g, " ").trim();
  return out.length > MAX_QUOTED_CHARS ? `${out.slice(0, MAX_QUOTED_CHARS)}…` : out;
}

function describeFailure(status: number, statusText: string, body: string, secrets: readonly string[]): string {
  let detail = "";
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  if (isRecord(parsed)) {
    const parts: string[] = [];
    if (typeof parsed.error === "string") parts.push(parsed.error);
    else if (isRecord(parsed.error) && typeof parsed.error.message === "string") parts.push(parsed.error.message);
    if (typeof parsed.error_description === "string") parts.push(parsed.error_description);
    detail = parts.join(": ");
  } else if (body.trim() !== "") {
    detail = body;
  }
  const head = `Google token exchange failed: HTTP ${status}${statusText ? ` ${statusText}` : ""}`;
  return detail ? `${head}: ${quote(detail, secrets)}` : head;
}

export function createAccessTokenProvider(options: TokenProviderOptions): AccessTokenProvider {
  const { account } = options;
  const tokenUri = options.tokenUri ?? account.token_uri ?? DEFAULT_TOKEN_URI;
  checkTokenUri(tokenUri, "token URI");
  const fetchImpl = options.fetch ?? fetch;
  const now = options.now ?? Date.now;
  const key = loadRsaPrivateKey(normalisePem(account.private_key));

  let cached: CachedToken | undefined;
  let inFlight: Promise<string> | undefined;
  /** Bumped by invalidate(), so an exchange started before it cannot repopulate the cache. */
  let generation = 0;

  async function exchange(): Promise<CachedToken> {
    const assertion = signAssertion(account, key, tokenUri, now());
    const secrets = [assertion, account.private_key];
    const headers = new Headers(options.fetchInit?.headers);
    headers.set("content-type", "application/x-www-form-urlencoded");
    headers.set("accept", "application/json");
    const body = new URLSearchParams({ grant_type: JWT_BEARER_GRANT, assertion }).toString();

    // The signed assertion goes to the token URI: only where the address policy allows.
    const refusal = await options.checkUrl?.(tokenUri);
    if (refusal) throw new AddressRefusedError(`token_uri: ${refusal}`);
    let response: Response;
    try {
      response = await fetchImpl(tokenUri, {
        ...options.fetchInit,
        signal: options.fetchInit?.signal ?? AbortSignal.timeout(DEFAULT_EXCHANGE_TIMEOUT_MS),
        method: "POST",
        headers,
        body,
        // A redirect would carry the signed assertion to another host: never follow one.
        redirect: "manual",
      });
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      throw new Error(`Google token exchange failed: request to ${tokenUri} failed: ${quote(reason, secrets)}`);
    }

    const text = await response.text().catch(() => "");
    if (!response.ok) {
      const message = describeFailure(response.status, response.statusText, text, secrets);
      // A 4xx (invalid_grant for a deleted or rotated key, a deleted client) refuses this
      // service account until someone changes it; a 408, 429 or 5xx may pass.
      const refused = response.status >= 400 && response.status < 500 && response.status !== 408 && response.status !== 429;
      throw refused ? new CredentialRefusedError(message, response.status) : new Error(message);
    }

    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error(`Google token exchange failed: HTTP ${response.status} response is not JSON`);
    }
    if (!isRecord(parsed) || typeof parsed.access_token !== "string" || parsed.access_token === "") {
      throw new Error(`Google token exchange failed: response has no "access_token"`);
    }
    if (typeof parsed.token_type === "string" && parsed.token_type.toLowerCase() !== "bearer") {
      throw new Error(`Google token exchange failed: unexpected token_type ${JSON.stringify(quote(parsed.token_type, secrets))}`);
    }
    const expiresIn = typeof parsed.expires_in === "string" ? Number(parsed.expires_in) : parsed.expires_in;
    if (typeof expiresIn !== "number" || !Number.isFinite(expiresIn) || expiresIn <= 0) {
      throw new Error(`Google token exchange failed: response has no valid "expires_in"`);
    }
    // Measured from when the answer arrived, not from when the request was sent.
    return { value: parsed.access_token, staleAt: now() + expiresIn * 1000 - EXPIRY_MARGIN_MS };
  }

  function token(): Promise<string> {
    if (cached && now() < cached.staleAt) return Promise.resolve(cached.value);
    if (inFlight) return inFlight;
    const started = generation;
    const pending = exchange().then(
      (fresh) => {
        if (generation === started) {
          cached = fresh;
          inFlight = undefined;
        }
        return fresh.value;
      },
      (err: unknown) => {
        if (generation === started) inFlight = undefined;
        throw err;
      },
    );
    cached = undefined;
    inFlight = pending;
    return pending;
  }

  function invalidate(stale?: string): void {
    if (stale !== undefined && cached?.value !== stale) return;
    generation++;
    cached = undefined;
    inFlight = undefined;
  }

  async function fresh(): Promise<string> {
    const started = generation;
    const got = await exchange();
    // Not over an invalidate() that came meanwhile: that token may be the refused one's successor.
    if (generation === started) cached = got;
    return got.value;
  }

  return { token, invalidate, fresh };
}

// ---------------------------------------------------------------------------
// Vertex AI endpoints
// ---------------------------------------------------------------------------

/** Multi-region locations (processing kept within the US or the EU) and their hosts, which follow no regional pattern. */
const MULTI_REGION_HOSTS: Record<string, string> = {
  us: "https://aiplatform.us.rep.googleapis.com",
  eu: "https://aiplatform.eu.rep.googleapis.com",
};

/** Base URL of the Vertex AI API for a location ("global", a multi-region "us" or "eu", or a region such as "us-central1"). */
export function vertexBaseUrl(location: string): string {
  if (location === "global") return "https://aiplatform.googleapis.com";
  if (Object.hasOwn(MULTI_REGION_HOSTS, location)) return MULTI_REGION_HOSTS[location]!;
  if (!/^[a-z][a-z0-9-]*[a-z0-9]$/.test(location)) {
    throw new Error(`invalid Vertex AI location ${JSON.stringify(location.slice(0, 64))}`);
  }
  return `https://${location}-aiplatform.googleapis.com`;
}
