import { isObject } from "./json.ts";

/** The model ids of an upstream list page shaped `{data: [{id}]}` (OpenAI, Anthropic). */
export function idsOf(body: unknown): string[] {
  const data = isObject(body) && Array.isArray(body.data) ? body.data : [];
  return data.map((m) => String((m as { id?: unknown }).id ?? "")).filter(Boolean);
}
