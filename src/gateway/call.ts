import { formatOf } from "../formats/registry.ts";
import type { ClientCall } from "../formats/format.ts";
import type { UpstreamCall } from "../upstreams/types.ts";

/**
 * The upstream call for an effective model: the only edits to a body are the model
 * name and, for OpenAI chat-style streams, `stream_options.include_usage` (so usage
 * can be metered; the extra chunk is hidden from clients that did not ask for it).
 * When nothing changes, the original bytes go upstream untouched.
 */
export function upstreamCall(call: ClientCall, effectiveModel: string | undefined): UpstreamCall {
  const format = formatOf(call.family);
  let json = call.json;
  let edited = false;
  // A call that names no model gets the endpoint's default for routing and pricing
  // only: the body stays as sent (the upstream applies its own default) unless
  // MODEL_MAPPER maps that default to another model.
  const defaulted = json?.model === undefined && effectiveModel === call.requestedModel;
  if (format.modelInBody && json && effectiveModel !== undefined && json.model !== effectiveModel && !defaulted) {
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
  return {
    family: call.family,
    method: call.method,
    path: format.upstreamPath(call, effectiveModel),
    search: call.search,
    model: effectiveModel,
    stream: call.stream,
    json,
    bytes: edited ? undefined : call.bytes,
    file: call.form?.path,
    headers: call.headers,
  };
}
