/**
 * What a family's rate-limit headers say (docs/api.md, "Rate-limit headers"): the
 * tightest request and token limits of a call, as admission left them. Each family
 * names them its own way (`WireFormat.rateLimitHeaders`); these are the values and the
 * time formats the families share.
 */

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
