import type { ErrorKind } from "../../core/errors.ts";
import { badRequest } from "../../core/errors.ts";
import { sseErrorEvent } from "../envelope.ts";
import type { ModelFacts, WireFormat } from "../format.ts";
import { isObject } from "../json.ts";
import { pageSize } from "../paging.ts";
import { geminiBodyForModel, geminiPathModels } from "./calls.ts";
import { geminiOutputAsked } from "./output.ts";
import { geminiTap, geminiUsageFromJson } from "./usage.ts";

/** google.rpc.Code names, as the Gemini API reports them. */
const GOOGLE_STATUS_OF: Record<ErrorKind, string> = {
  invalid_request: "INVALID_ARGUMENT",
  authentication: "UNAUTHENTICATED",
  permission: "PERMISSION_DENIED",
  not_found: "NOT_FOUND",
  conflict: "ALREADY_EXISTS",
  too_large: "INVALID_ARGUMENT",
  rate_limit: "RESOURCE_EXHAUSTED",
  upstream: "UNAVAILABLE",
  unavailable: "UNAVAILABLE",
  timeout: "DEADLINE_EXCEEDED",
  internal: "INTERNAL",
};

/**
 * Gemini methods on a model path, as the Google SDKs call them (`/v1/models/m:generateContent`);
 * the model may hold slashes (`vendor/model`), which they send unencoded.
 */
export const GEMINI_MODEL_METHOD = /^\/v1(?:beta)?\/models\/.+:[A-Za-z]+$/;
/**
 * Paths only the Google SDK calls, outside `/v1beta/`: its upload URL (`/upload/v1beta/files`,
 * `/upload/v1/files`) and the 3.x `/v1/` resources no other family has. None is served; owning
 * them gives their 404 Gemini's envelope.
 */
const GEMINI_ONLY_PATH = /^\/(?:upload\/v1(?:beta)?\/|v1\/(?:cachedContents|operations|tunedModels|corpora|fileSearchStores)(?:[/:?]|$))/;
const EMBEDDING = /embed/i;

function model(id: string, facts: (id: string) => ModelFacts) {
  const { contextWindow, maxOutput, formats } = facts(id);
  return {
    name: `models/${id}`,
    baseModelId: id,
    version: "",
    displayName: id,
    description: "",
    ...(contextWindow !== undefined && { inputTokenLimit: contextWindow }),
    ...(maxOutput !== undefined && { outputTokenLimit: maxOutput }),
    supportedGenerationMethods: EMBEDDING.test(id) ? ["embedContent", "batchEmbedContents"] : ["generateContent", "streamGenerateContent", "countTokens"],
    x_router_formats: formats,
  };
}

/** Gemini generateContent and friends: the model and method in the path, keys in `x-goog-api-key`. */
export const gemini: WireFormat = {
  family: "gemini",
  endpoints: {},
  pathModels: geminiPathModels,
  ownsPath: (path) => path.startsWith("/v1beta/") || GEMINI_MODEL_METHOD.test(path) || GEMINI_ONLY_PATH.test(path),
  // The Google SDK sends its key as `x-goog-api-key` and no Authorization header.
  sentBy: (headers) => headers.has("x-goog-api-key") && !headers.has("authorization"),
  keyHeader: "x-goog-api-key",
  hosts: ["generativelanguage.googleapis.com"],
  publishes: /^(gemini-|text-embedding-004|imagen-|veo-)/,
  errorBody: (error) => ({ error: { code: error.status, message: error.message, status: GOOGLE_STATUS_OF[error.kind] } }),
  streamErrorEvent(error) {
    return sseErrorEvent(this.errorBody(error));
  },
  modelInBody: false,
  bodyForModel: geminiBodyForModel,
  wires: [
    {
      wire: "gemini-generate",
      keyFormat: "gemini",
      carries: (call) => call.operation === "generateContent" || call.operation === "streamGenerateContent",
      modelCall: { endpoint: geminiPathModels.endpoint("v1beta", "generateContent")!, operation: "generateContent", version: "v1beta" },
    },
  ],
  keyFormatOf: () => "gemini",
  upstreamPath: (call, effectiveModel) => `/${call.version}/models/${encodeURIComponent(effectiveModel ?? "")}:${call.operation}`,
  authorize(headers, secret) {
    headers.set("x-goog-api-key", secret);
  },
  outputAsked: geminiOutputAsked,
  tokenCountAnswer: (tokens) => ({ totalTokens: tokens }),
  usageFromJson: geminiUsageFromJson,
  streamUsageTap: geminiTap,
  /** Paged by `pageSize` and an opaque `pageToken`, as Google's own list. */
  modelList(ids, query, facts) {
    const size = pageSize(query.get("pageSize"), 50, 1000, "pageSize");
    const token = query.get("pageToken");
    const from = token ? Number.parseInt(Buffer.from(token, "base64url").toString("utf8"), 10) : 0;
    if (!Number.isInteger(from) || from < 0) throw badRequest("pageToken is not one this router issued", "pageToken");
    const page = ids.slice(from, from + size);
    const next = from + size < ids.length ? Buffer.from(String(from + size)).toString("base64url") : undefined;
    return { models: page.map((id) => model(id, facts)), ...(next && { nextPageToken: next }) };
  },
  model,
  upstreamModelList: (secret, cursor) => ({
    path: `/v1beta/models?pageSize=1000${cursor ? `&pageToken=${encodeURIComponent(cursor)}` : ""}`,
    headers: { "x-goog-api-key": secret },
  }),
  readModelPage(body) {
    const models = isObject(body) && Array.isArray(body.models) ? body.models : [];
    const ids = models.map((m) => String((m as { name?: unknown }).name ?? "").replace(/^models\//, "")).filter(Boolean);
    const next = isObject(body) && typeof body.nextPageToken === "string" && body.nextPageToken ? body.nextPageToken : undefined;
    return { ids, next };
  },
};
