import { badRequest } from "../core/errors.ts";
import { parseJsonObject } from "../http/body.ts";
import type { Family } from "../http/family.ts";
import type { UpstreamCall } from "../upstreams/types.ts";
import type { Endpoint } from "./endpoints.ts";
import { forwardableRequestHeaders } from "./headers.ts";
import type { SpooledForm } from "../http/multipart.ts";

/** A client's model call, parsed once: what routing, admission and the relay need. */
export interface ClientCall {
  endpoint: Endpoint;
  /** HTTP method sent upstream (POST for model calls; object calls keep the client's). */
  method: string;
  family: Family;
  requestedModel: string | undefined;
  stream: boolean;
  /** The parsed JSON body (for JSON endpoints). */
  json: Record<string, unknown> | undefined;
  /** The body as received. */
  bytes: Uint8Array;
  /** Gemini: the method after the colon (`generateContent`). */
  geminiMethod?: string;
  /** Gemini: API version segment of the client's path. */
  version?: "v1" | "v1beta";
  /** True when the router added `stream_options.include_usage` and must hide that chunk. */
  hideUsageChunk: boolean;
  headers: Headers;
  search: string;
  /** A multipart body spooled to disk. */
  form?: SpooledForm;
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

/** Reads a JSON model call for an OpenAI or Anthropic endpoint. */
export function bodyCall(endpoint: Endpoint, request: Request, bytes: Uint8Array): ClientCall {
  const json = parseJsonObject(bytes);
  const model = json.model ?? endpoint.defaultModel;
  if (endpoint.model === "body" && (typeof model !== "string" || model.trim() === "")) {
    throw badRequest("`model` is required and must be a string", "model");
  }
  const stream = json.stream === true;
  return {
    endpoint,
    method: "POST",
    family: endpoint.family,
    requestedModel: typeof model === "string" && model ? model : undefined,
    stream,
    json,
    bytes,
    hideUsageChunk: false,
    headers: forwardableRequestHeaders(request.headers),
    search: "",
  };
}

/** Form fields the router reads for routing, limits and pricing. */
const ROUTED_FIELDS = ["model", "stream", "n", "size"] as const;

/** A multipart call: the model (and stream flag) come from the form's text fields. */
export function multipartCall(endpoint: Endpoint, request: Request, form: SpooledForm): ClientCall {
  for (const name of ROUTED_FIELDS) {
    // The upstream might read another occurrence than the router routed, priced and checked.
    if (form.unclear.has(name)) throw badRequest(`The form field \`${name}\` must appear once and be at most 64 KiB`, name);
  }
  const model = form.fields.get("model")?.trim() || endpoint.defaultModel;
  if (!model && endpoint.model === "body") throw badRequest("`model` is required", "model");
  if (form.files === 0 && endpoint.path !== "/v1/files") throw badRequest("This endpoint needs a file part in the form", "file");
  return {
    endpoint,
    method: "POST",
    family: endpoint.family,
    requestedModel: model,
    stream: form.fields.get("stream") === "true",
    json: undefined,
    bytes: new Uint8Array(0),
    hideUsageChunk: false,
    headers: forwardableRequestHeaders(request.headers),
    search: "",
    form,
  };
}

/** Reads a Gemini call: the model and method come from the path. */
export function geminiCall(endpoint: Endpoint, request: Request, bytes: Uint8Array, spec: string): ClientCall {
  const colon = spec.lastIndexOf(":");
  const model = decodeURIComponent(spec.slice(0, colon));
  const method = spec.slice(colon + 1);
  if (!model) throw badRequest("The model name in the path is empty", "model");
  const json = bytes.byteLength === 0 ? {} : parseJsonObject(bytes);
  const url = new URL(request.url);
  return {
    endpoint,
    method: "POST",
    family: "gemini",
    requestedModel: model,
    stream: method === "streamGenerateContent",
    json,
    bytes,
    geminiMethod: method,
    version: endpoint.path.startsWith("/v1beta") ? "v1beta" : "v1",
    hideUsageChunk: false,
    headers: forwardableRequestHeaders(request.headers),
    search: method === "streamGenerateContent" ? "?alt=sse" : forwardedSearch(url),
  };
}

/**
 * The upstream call for an effective model: the only edits to a body are the model
 * name and, for OpenAI chat-style streams, `stream_options.include_usage` (so usage
 * can be metered; the extra chunk is hidden from clients that did not ask for it).
 * When nothing changes, the original bytes go upstream untouched.
 */
export function upstreamCall(call: ClientCall, effectiveModel: string | undefined): UpstreamCall {
  let json = call.json;
  let edited = false;
  // A call that names no model gets the endpoint's default for routing and pricing
  // only: the body stays as sent (the upstream applies its own default) unless
  // MODEL_MAPPER maps that default to another model.
  const defaulted = json?.model === undefined && effectiveModel === call.requestedModel;
  if (call.family !== "gemini" && json && effectiveModel !== undefined && json.model !== effectiveModel && !defaulted) {
    json = { ...json, model: effectiveModel };
    edited = true;
  }
  if (call.endpoint.injectStreamUsage && call.stream && json) {
    const options = json.stream_options;
    const wants = options !== null && typeof options === "object" && (options as Record<string, unknown>).include_usage === true;
    if (!wants) {
      json = { ...json, stream_options: { ...(typeof options === "object" && options ? options : {}), include_usage: true } };
      edited = true;
      call.hideUsageChunk = true;
    }
  }
  const path =
    call.family === "gemini" ? `/${call.version}/models/${encodeURIComponent(effectiveModel ?? "")}:${call.geminiMethod}` : call.endpoint.path;
  return {
    family: call.family,
    method: call.method,
    path,
    search: call.search,
    model: effectiveModel,
    stream: call.stream,
    json,
    bytes: edited ? undefined : call.bytes,
    file: call.form?.path,
    headers: call.headers,
  };
}
