/**
 * Rate-limit headers (docs/api.md, "Rate-limit headers"): the tightest request window
 * and the tightest token window of a call, in the names of the client's API family
 * (`WireFormat.rateLimitHeaders`: OpenAI's `x-ratelimit-*`, Anthropic's
 * `anthropic-ratelimit-*`; Gemini has none, as Google sends none).
 */
import type { Family } from "../formats/family.ts";
import type { RateLimits } from "../formats/rate-limits.ts";
import { formatOf } from "../formats/registry.ts";

export { openAiDuration, rfc3339Seconds, type RateLimits, type RateLimitStanding } from "../formats/rate-limits.ts";

/** The headers for a call's limits in its family's names; undefined when none apply or the family has none. */
export function rateLimitHeaders(family: Family, limits: RateLimits, now: number): Record<string, string> | undefined {
  if (!limits.requests && !limits.tokens) return undefined;
  return formatOf(family).rateLimitHeaders?.(limits, now);
}

/** The response with the call's rate-limit headers (re-wrapped when its headers are immutable). */
export function withRateLimitHeaders(response: Response, family: Family, limits: RateLimits | undefined, now: number): Response {
  if (!limits) return response;
  const headers = rateLimitHeaders(family, limits, now);
  if (!headers) return response;
  let out = response;
  try {
    for (const name in headers) out.headers.set(name, headers[name]!);
  } catch {
    out = new Response(response.body, response);
    for (const name in headers) out.headers.set(name, headers[name]!);
  }
  return out;
}
