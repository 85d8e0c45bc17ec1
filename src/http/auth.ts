import { hashApiKey } from "../accounts/api-keys.ts";
import type { Principal, PrincipalCache } from "../accounts/principal.ts";
import { unauthorized } from "../core/errors.ts";
import type { Family } from "../formats/family.ts";
import { formatOf } from "../formats/registry.ts";
import { metaOf } from "./context.ts";

/**
 * Query parameters through which some clients try to pass a key; never accepted, in any
 * letter case (object routes forward the client's query upstream: a `?Key=` riding along
 * with a valid header would take the router key to the provider's host).
 */
const KEY_PARAMS = new Set(["key", "api_key", "api-key", "apikey", "access_token", "token"]);

/** Made once: a regular expression literal is a new object each time it is evaluated, and this runs per request. */
const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * The API key of a request, from the headers its family's SDKs use: Bearer always;
 * the family's own key header otherwise (Anthropic's `x-api-key`, Gemini's `x-goog-api-key`).
 */
export function extractApiKey(request: Request, family: Family): string | undefined {
  const authorization = request.headers.get("authorization");
  if (authorization) {
    const match = BEARER.exec(authorization);
    if (match) return match[1];
  }
  const header = formatOf(family).keyHeader;
  return header ? (request.headers.get(header) ?? undefined) : undefined;
}

/** 401 when a key rides in the URL (`?key=`, `?api_key=`, …): URLs end up in logs and histories. */
export function refuseKeyInUrl(url: string): void {
  const query = url.indexOf("?");
  if (query < 0) return;
  for (const name of new URLSearchParams(url.slice(query + 1)).keys()) {
    if (KEY_PARAMS.has(name.toLowerCase())) {
      throw unauthorized(
        "API keys are not accepted in the URL; send the key in the Authorization header (Bearer)",
        "key_in_url",
      );
    }
  }
}

export interface Authenticator {
  /** The caller's principal; throws 401 when the key is missing, unknown or in the URL. */
  require(request: Request, family: Family): Promise<Principal>;
  /** Like `require`, but a request with no key at all yields undefined (e.g. GET /x-pricing). */
  optional(request: Request, family: Family): Promise<Principal | undefined>;
}

export function createAuthenticator(principals: PrincipalCache): Authenticator {
  const resolve = async (request: Request, family: Family, required: boolean): Promise<Principal | undefined> => {
    refuseKeyInUrl(request.url);
    const key = extractApiKey(request, family);
    if (!key) {
      if (!required) return undefined;
      throw unauthorized("Missing API key: send it as Authorization: Bearer <key>", "missing_api_key");
    }
    const principal = await principals.get(hashApiKey(key));
    if (!principal) throw unauthorized("Invalid API key", "invalid_api_key");
    const meta = metaOf(request);
    if (meta) meta.accountId = principal.account.id;
    return principal;
  };
  return {
    // With `required`, resolve never answers undefined: it throws instead.
    require: (request, family) => resolve(request, family, true) as Promise<Principal>,
    optional: (request, family) => resolve(request, family, false),
  };
}
