/**
 * Rate-limit headers (docs/api.md, "Rate-limit headers"): the tightest request window
 * and the tightest token window of a call, as the client's API family names them.
 * OpenAI: `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, the reset as a
 * duration (`1s`, `6m0s`, `1h2m3s`, `250ms`); Anthropic:
 * `anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}`, the reset as an
 * RFC 3339 time; Gemini: none (Google sends none).
 */
import type { Family } from "../formats/family.ts";

/** One limit as a call left it. */
export interface RateLimitStanding {
  limit: number;
  /** What is left once this call is counted (its token reservation included). */
  remaining: number;
  /** Until the window frees what it counted first (a day quota: until the next business day). */
  resetMs: number;
}

/** The tightest request and token limits of a call; absent kinds have no limit. */
export interface RateLimits {
  requests?: RateLimitStanding;
  tokens?: RateLimitStanding;
}

/**
 * A duration as OpenAI writes its resets: under a second in whole milliseconds (`250ms`),
 * else whole seconds (rounded up, so waiting that long is enough) with minutes and hours
 * (`1s`, `6m0s`, `1h2m3s`), as Go's time.Duration prints them.
 */
export function openAiDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))}ms`;
  let seconds = Math.ceil(ms / 1000);
  const hours = Math.floor(seconds / 3600);
  seconds -= hours * 3600;
  const minutes = Math.floor(seconds / 60);
  seconds -= minutes * 60;
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`;
  if (minutes > 0) return `${minutes}m${seconds}s`;
  return `${seconds}s`;
}

/** An instant as Anthropic writes its resets: RFC 3339 in UTC, whole seconds (rounded up). */
export function rfc3339Seconds(at: number): string {
  return new Date(Math.ceil(at / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

/** The headers for a call's limits in its family's names; undefined when none apply or the family has none. */
export function rateLimitHeaders(family: Family, limits: RateLimits, now: number): Record<string, string> | undefined {
  if (family === "gemini") return undefined;
  const out: Record<string, string> = {};
  const { requests, tokens } = limits;
  if (family === "anthropic") {
    if (requests) {
      out["anthropic-ratelimit-requests-limit"] = String(requests.limit);
      out["anthropic-ratelimit-requests-remaining"] = String(requests.remaining);
      out["anthropic-ratelimit-requests-reset"] = rfc3339Seconds(now + requests.resetMs);
    }
    if (tokens) {
      out["anthropic-ratelimit-tokens-limit"] = String(tokens.limit);
      out["anthropic-ratelimit-tokens-remaining"] = String(tokens.remaining);
      out["anthropic-ratelimit-tokens-reset"] = rfc3339Seconds(now + tokens.resetMs);
    }
  } else {
    if (requests) {
      out["x-ratelimit-limit-requests"] = String(requests.limit);
      out["x-ratelimit-remaining-requests"] = String(requests.remaining);
      out["x-ratelimit-reset-requests"] = openAiDuration(requests.resetMs);
    }
    if (tokens) {
      out["x-ratelimit-limit-tokens"] = String(tokens.limit);
      out["x-ratelimit-remaining-tokens"] = String(tokens.remaining);
      out["x-ratelimit-reset-tokens"] = openAiDuration(tokens.resetMs);
    }
  }
  return requests || tokens ? out : undefined;
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
