import { formatOf } from "../formats/registry.ts";
import type { ClientCall } from "../formats/format.ts";
import type { UpstreamCall } from "../upstreams/types.ts";
import { withMembers } from "../formats/held-json.ts";

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
  /** The original bytes with the usage option spliced in, when that is the only edit. */
  let spliced: Uint8Array | undefined;
  // A call that names no model gets the endpoint's default for routing and pricing
  // only: the body stays as sent (the upstream applies its own default) unless
  // MODEL_MAPPER maps that default to another model.
  const defaulted = json?.model === undefined && effectiveModel === call.requestedModel;
  if (format.modelInBody && json && effectiveModel !== undefined && json.model !== effectiveModel && !defaulted) {
    json = withMembers(json, { model: effectiveModel });
    edited = true;
  }
  // A model in the path may be repeated in the body, where the upstream checks it against the path's.
  if (!format.modelInBody && format.bodyForModel && json && effectiveModel !== undefined && call.requestedModel !== undefined && effectiveModel !== call.requestedModel) {
    const rewritten = format.bodyForModel(json, call.requestedModel, effectiveModel);
    if (rewritten) {
      json = rewritten;
      edited = true;
    }
  }
  if (call.endpoint.injectStreamUsage && call.stream && json) {
    const options = json.stream_options;
    const wants = options !== null && typeof options === "object" && (options as Record<string, unknown>).include_usage === true;
    if (!wants) {
      // Without other edits and without stream_options at all (the SDKs' default), the
      // option goes in front of the original bytes: a long conversation is not serialised again.
      if (!edited && options === undefined) spliced = withUsageOption(call.bytes);
      json = withMembers(json, { stream_options: { ...(typeof options === "object" && options ? options : {}), include_usage: true } });
      if (!spliced) edited = true;
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
    bytes: edited ? undefined : (spliced ?? call.bytes),
    file: call.form?.path,
    headers: call.headers,
    ...(call.hideUsageChunk && call.json?.stream_options === undefined && { addedStreamOptions: true }),
  };
}

const USAGE_OPTION = new TextEncoder().encode('"stream_options":{"include_usage":true},');
const isJsonSpace = (byte: number | undefined) => byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;

/**
 * A JSON object's bytes with `"stream_options":{"include_usage":true}` as its first
 * member; undefined unless the bytes start (after whitespace) with a non-empty object.
 * The caller knows the parsed body has no `stream_options`, so no key is repeated.
 */
export function withUsageOption(bytes: Uint8Array | undefined): Uint8Array | undefined {
  if (!bytes) return undefined;
  let open = 0;
  while (isJsonSpace(bytes[open])) open++;
  if (bytes[open] !== 0x7b) return undefined;
  let first = open + 1;
  while (isJsonSpace(bytes[first])) first++;
  if (first >= bytes.byteLength || bytes[first] === 0x7d) return undefined;
  // Every byte is written below: no zero-filling first (a 256 KiB body: 34 µs against 60).
  const out = Buffer.allocUnsafe(bytes.byteLength + USAGE_OPTION.byteLength);
  out.set(bytes.subarray(0, open + 1), 0);
  out.set(USAGE_OPTION, open + 1);
  out.set(bytes.subarray(open + 1), open + 1 + USAGE_OPTION.byteLength);
  return out;
}
