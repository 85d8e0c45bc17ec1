import { ERROR_TYPE_OF, sseErrorEvent } from "../envelope.ts";
import type { Endpoint, ModelFacts, WireFormat } from "../format.ts";
import { idsOf } from "../model-lists.ts";
import { isObject } from "../json.ts";
import { pageSize } from "../paging.ts";
import { rfc3339Seconds } from "../rate-limits.ts";
import { anthropicTap, anthropicUsageFromJson } from "./usage.ts";

/** The API version sent upstream when the client named none (the SDKs always name one). */
export const ANTHROPIC_VERSION = "2023-06-01";
const EPOCH = "1970-01-01T00:00:00Z";

const ENDPOINTS: Record<string, Endpoint> = {
  "/v1/messages": { family: "anthropic", path: "/v1/messages", model: "body", idempotent: true, outputLimit: ["max_tokens"] },
  "/v1/messages/count_tokens": { family: "anthropic", path: "/v1/messages/count_tokens", model: "body", idempotent: true, billing: "free", counting: true },
};

const model = (id: string, facts: (id: string) => ModelFacts) => ({ type: "model", id, display_name: id, created_at: EPOCH, x_router_formats: facts(id).formats });

/** Anthropic Messages: `/v1/messages…`, keys in `x-api-key` (0.x SDKs), named SSE events. */
export const anthropic: WireFormat = {
  family: "anthropic",
  endpoints: ENDPOINTS,
  ownsPath: (path) => path.startsWith("/v1/messages"),
  // The Anthropic SDK always sends `anthropic-version`.
  sentBy: (headers) => headers.has("anthropic-version"),
  keyHeader: "x-api-key",
  hosts: ["api.anthropic.com"],
  publishes: /^claude-/,
  errorBody: (error) => ({ type: "error", error: { type: ERROR_TYPE_OF[error.kind], message: error.message } }),
  streamErrorEvent(error) {
    return sseErrorEvent(this.errorBody(error), "error");
  },
  modelInBody: true,
  wires: [{ wire: "anthropic-messages", keyFormat: "anthropic", carries: (call) => call.endpoint.path === "/v1/messages", modelCall: { endpoint: ENDPOINTS["/v1/messages"]! } }],
  keyFormatOf: () => "anthropic",
  upstreamPath: (call) => call.endpoint.path,
  authorize(headers, secret) {
    headers.set("x-api-key", secret);
    if (!headers.has("anthropic-version")) headers.set("anthropic-version", ANTHROPIC_VERSION);
  },
  // Anthropic's names: anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}, resets as RFC 3339 times.
  rateLimitHeaders({ requests, tokens }, now) {
    const out: Record<string, string> = {};
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
    return out;
  },
  tokenCountAnswer: (tokens) => ({ input_tokens: tokens }),
  usageFromJson: anthropicUsageFromJson,
  streamUsageTap: anthropicTap,
  /** Paged by `limit`, `after_id` and `before_id`, as Anthropic's own list. */
  modelList(ids, query, facts) {
    const limit = pageSize(query.get("limit"), 20, 1000, "limit");
    const after = query.get("after_id");
    const before = query.get("before_id");
    let from = 0;
    let to = ids.length;
    if (after) from = ids.indexOf(after) + 1;
    if (before) to = Math.max(0, ids.indexOf(before));
    const page = before && !after ? ids.slice(Math.max(from, to - limit), to) : ids.slice(from, Math.min(to, from + limit));
    const more = before && !after ? to - page.length > from : from + page.length < to;
    return { data: page.map((id) => model(id, facts)), has_more: more, first_id: page[0] ?? null, last_id: page.at(-1) ?? null };
  },
  model,
  upstreamModelList: (secret, cursor) => ({
    path: `/v1/models?limit=1000${cursor ? `&after_id=${encodeURIComponent(cursor)}` : ""}`,
    headers: { "x-api-key": secret, "anthropic-version": ANTHROPIC_VERSION },
  }),
  readModelPage: (body) => ({
    ids: idsOf(body),
    next: isObject(body) && body.has_more === true && typeof body.last_id === "string" ? body.last_id : undefined,
  }),
};
