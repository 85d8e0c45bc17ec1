import { ERROR_TYPE_OF, sseErrorEvent } from "../envelope.ts";
import { idsOf } from "../model-lists.ts";
import type { ModelFacts, WireFormat } from "../format.ts";
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
  upstreamPath: (call) => call.endpoint.path,
  authorize(headers, secret) {
    headers.set("authorization", `Bearer ${secret}`);
  },
  usageFromJson: openaiUsageFromJson,
  streamUsageTap: openaiTap,
  modelList: (ids, _query, facts) => ({ object: "list", data: ids.map((id) => model(id, facts)) }),
  model,
  upstreamModelList: (secret) => ({ path: "/v1/models", headers: { authorization: `Bearer ${secret}` } }),
  readModelPage: (body) => ({ ids: idsOf(body), next: undefined }),
};
