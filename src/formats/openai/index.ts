import { ERROR_TYPE_OF, sseErrorEvent } from "../envelope.ts";
import { idsOf } from "../model-lists.ts";
import type { ModelFacts, WireFormat } from "../format.ts";
import { openAiDuration } from "../rate-limits.ts";
import { OPENAI_ALIASES, OPENAI_ENDPOINTS } from "./endpoints.ts";
import { openaiTap, openaiUsageFromJson } from "./usage.ts";

const model = (id: string, facts: (id: string) => ModelFacts) => ({ id, object: "model", created: 0, owned_by: "router", x_router_formats: facts(id).formats });

const endpoints = { ...OPENAI_ENDPOINTS };
for (const [alias, path] of Object.entries(OPENAI_ALIASES)) endpoints[alias] = OPENAI_ENDPOINTS[path]!;

/** OpenAI (Chat Completions, Responses and the rest of its surface): every path no other family claims. */
export const openai: WireFormat = {
  family: "openai",
  endpoints,
  ownsPath: () => true,
  hosts: ["api.openai.com"],
  publishes: /^(gpt-|chatgpt-|o\d|text-embedding-3|text-embedding-ada|omni-moderation|text-moderation|dall-e|whisper|tts-|sora)/,
  errorBody: (error) => ({
    error: { message: error.message, type: ERROR_TYPE_OF[error.kind], param: error.param ?? null, code: error.code ?? null },
  }),
  streamErrorEvent(error) {
    return sseErrorEvent(this.errorBody(error));
  },
  modelInBody: true,
  wires: [
    { wire: "openai-chat", keyFormat: "openai", carries: (call) => call.endpoint.path === "/v1/chat/completions", modelCall: { endpoint: OPENAI_ENDPOINTS["/v1/chat/completions"]! } },
    { wire: "openai-responses", keyFormat: "responses", carries: (call) => call.endpoint.path === "/v1/responses", modelCall: { endpoint: OPENAI_ENDPOINTS["/v1/responses"]! } },
  ],
  // The Responses API's other endpoints (compact, objects) belong with it; the rest of the surface is Chat's family.
  keyFormatOf: (call) => (call.endpoint.path.startsWith("/v1/responses") ? "responses" : "openai"),
  upstreamPath: (call) => call.endpoint.path,
  authorize(headers, secret) {
    headers.set("authorization", `Bearer ${secret}`);
  },
  // OpenAI's names: x-ratelimit-{limit,remaining,reset}-{requests,tokens}, resets as durations.
  rateLimitHeaders({ requests, tokens }) {
    const out: Record<string, string> = {};
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
    return out;
  },
  usageFromJson: openaiUsageFromJson,
  streamUsageTap: openaiTap,
  modelList: (ids, _query, facts) => ({ object: "list", data: ids.map((id) => model(id, facts)) }),
  model,
  upstreamModelList: (secret) => ({ path: "/v1/models", headers: { authorization: `Bearer ${secret}` } }),
  readModelPage: (body) => ({ ids: idsOf(body), next: undefined }),
};
