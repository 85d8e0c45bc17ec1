import { badRequest } from "../../core/errors.ts";
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
  const model = decodeURIComponent(spec.slice(0, colon));
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
