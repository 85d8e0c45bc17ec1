import { LAZY_BODY_BYTES } from "../formats/lazy-body.ts";
import { conversationIsPlain } from "../formats/held-json.ts";
import { indexOfBytes } from "../formats/json.ts";
import type { ClientCall } from "../formats/format.ts";

const FILE_ID = new TextEncoder().encode('"file_id');
/** A key may be written with escapes (`"file\u005fid"`), which JSON.parse, and so the upstream, reads as the name. */
const ESCAPE = new TextEncoder().encode("\\u");
const NONE: readonly string[] = [];

/**
 * The upstream files a model call's body names (`file_id`, `file_ids` at any depth: a
 * Responses `input_file`, a Chat file part, a message's attachments, tool resources).
 * Each must be the caller's, as a file named in a path is (docs/api.md, "Resource
 * affinity"). Most bodies name none, and are not walked: a small one whose bytes hold
 * neither the name nor an escape, and in a large one each conversation left as text
 * whose scan met no part field (`conversationIsPlain`: the scan marks `file_id` keys,
 * and any key written with an escape).
 */
export function namedFileIds(call: Pick<ClientCall, "bytes" | "json">): readonly string[] {
  const { bytes, json } = call;
  if (!json || bytes.byteLength === 0) return NONE;
  const small = bytes.byteLength < LAZY_BODY_BYTES;
  if (small && indexOfBytes(bytes, FILE_ID) < 0 && indexOfBytes(bytes, ESCAPE) < 0) return NONE;
  const ids = new Set<string>();
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) {
      for (const item of value) walk(item);
      return;
    }
    if (value === null || typeof value !== "object") return;
    for (const [key, inner] of Object.entries(value)) {
      if (key === "file_id" && typeof inner === "string") ids.add(inner);
      else if (key === "file_ids" && Array.isArray(inner)) for (const id of inner) typeof id === "string" && ids.add(id);
      else walk(inner);
    }
  };
  for (const key of Object.keys(json)) if (small || !conversationIsPlain(json, key)) walk(json[key]);
  return ids.size === 0 ? NONE : [...ids];
}
