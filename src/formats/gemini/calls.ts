import { badRequest, modelFromPath } from "../../core/errors.ts";
import { withMembers } from "../held-json.ts";
import { parseCallBody } from "../lazy-body.ts";
import type { CallSource, ClientCall, Endpoint, PathModelCalls } from "../format.ts";

/** Gemini methods served on `/v1beta/models/{model}:{method}` and `/v1/models/{model}:{method}`. */
export const GEMINI_METHODS = new Set(["generateContent", "streamGenerateContent", "countTokens", "embedContent", "batchEmbedContents"]);

function endpoint(version: string, method: string): Endpoint | undefined {
  if (!GEMINI_METHODS.has(method)) return undefined;
  return {
    family: "gemini",
    path: `/${version}/models`,
    model: "path",
    idempotent: true,
    ...(method === "countTokens" && { billing: "free" as const, counting: true as const }),
    ...((method === "embedContent" || method === "batchEmbedContents") && { embedding: true as const }),
  };
}

/** Query parameters kept when forwarding (credentials never are). */
function forwardedSearch(url: URL): string {
  const params = new URLSearchParams();
  url.searchParams.forEach((value, name) => {
    if (name === "alt") params.set(name, value);
  });
  const text = params.toString();
  return text ? `?${text}` : "";
}

/** Reads a Gemini call: the model and method come from the path. */
function read(endpoint: Endpoint, bytes: Uint8Array, spec: string, source: CallSource): ClientCall {
  const colon = spec.lastIndexOf(":");
  const model = modelFromPath(spec.slice(0, colon));
  const method = spec.slice(colon + 1);
  if (!model) throw badRequest("The model name in the path is empty", "model");
  const json = bytes.byteLength === 0 ? {} : parseCallBody(bytes);
  return {
    endpoint,
    method: "POST",
    family: "gemini",
    requestedModel: model,
    stream: method === "streamGenerateContent",
    json,
    bytes,
    operation: method,
    version: endpoint.path.startsWith("/v1beta") ? "v1beta" : "v1",
    hideUsageChunk: false,
    headers: source.headers,
    search: method === "streamGenerateContent" ? "?alt=sse" : forwardedSearch(new URL(source.url)),
  };
}

export const geminiPathModels: PathModelCalls = { versions: ["v1beta", "v1"], primary: "generateContent", endpoint, read };

/**
 * A body naming the requested model, for the effective one (MODEL_MAPPER rewrote the
 * path's): batchEmbedContents repeats the model in each of its `requests` (the Google
 * SDKs send every embedContent so), and Google refuses a request whose model is not
 * the path's. Only mentions of the requested model change, with or without `models/`;
 * undefined when the body has none.
 */
export function geminiBodyForModel(json: Record<string, unknown>, requestedModel: string, effectiveModel: string): Record<string, unknown> | undefined {
  const names = (value: unknown) => value === requestedModel || value === `models/${requestedModel}`;
  const target = `models/${effectiveModel}`;
  const members: Record<string, unknown> = {};
  if (names(json.model)) members.model = target;
  const requests = json.requests;
  if (Array.isArray(requests) && requests.some((r) => r !== null && typeof r === "object" && names((r as Record<string, unknown>).model))) {
    members.requests = requests.map((r) => (r !== null && typeof r === "object" && names((r as Record<string, unknown>).model) ? { ...(r as object), model: target } : r));
  }
  return Object.keys(members).length > 0 ? withMembers(json, members) : undefined;
}
