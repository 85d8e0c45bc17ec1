import { badRequest } from "../core/errors.ts";
import type { SpooledForm } from "../http/multipart.ts";
import type { CallSource, ClientCall, Endpoint } from "./format.ts";
import { parseCallBody } from "./lazy-body.ts";

/** Reads a JSON model call whose body names its model (OpenAI, Anthropic). */
export function bodyCall(endpoint: Endpoint, bytes: Uint8Array, source: CallSource): ClientCall {
  const json = parseCallBody(bytes);
  const model = json.model ?? endpoint.defaultModel;
  if (endpoint.model === "body" && (typeof model !== "string" || model.trim() === "")) {
    throw badRequest("`model` is required and must be a string", "model");
  }
  // A background response's counts come only when it is polled, an object call that is
  // not metered: its generation would go uncharged, so it is refused before admission.
  if (endpoint.creates === "response" && json.background === true) {
    throw badRequest("Background responses are not supported through this router: their usage could not be metered. Send the call without `background` (stream it for a long run)", "background", "unsupported_parameter");
  }
  return {
    endpoint,
    method: "POST",
    family: endpoint.family,
    requestedModel: typeof model === "string" && model ? model : undefined,
    stream: json.stream === true,
    json,
    bytes,
    hideUsageChunk: false,
    headers: source.headers,
    search: "",
  };
}

/** Form fields the router reads for routing, limits and pricing. */
const ROUTED_FIELDS = ["model", "stream", "n", "size"] as const;

/** A multipart call: the model (and stream flag) come from the form's text fields. */
export function multipartCall(endpoint: Endpoint, form: SpooledForm, source: CallSource): ClientCall {
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
    headers: source.headers,
    search: "",
    form,
  };
}
