/** A Responses reasoning item as a part of the shared model, the same whether a client sends it back or an upstream answers it. */
import { isObject, type JsonObject } from "../../../json.ts";
import type { IrPart } from "../../ir.ts";

/** The texts of a reasoning item's summary or content parts, joined as paragraphs. */
export function reasoningText(parts: unknown, type: "summary_text" | "reasoning_text"): string {
  if (!Array.isArray(parts)) return "";
  return parts
    .filter((p): p is JsonObject => isObject(p) && p.type === type && typeof p.text === "string")
    .map((p) => p.text as string)
    .join("\n\n");
}

/**
 * The summary (or, failing one, the reasoning text) as thinking, signed by the item's
 * `encrypted_content`, which only Responses can read; an item with encrypted content
 * only is hidden reasoning; an empty item carries nothing.
 */
export function reasoningPart(item: JsonObject): IrPart | undefined {
  const text = reasoningText(item.summary, "summary_text") || reasoningText(item.content, "reasoning_text");
  const encrypted = item.encrypted_content;
  const signature = typeof encrypted === "string" && encrypted !== "" ? { wire: "openai-responses" as const, value: encrypted } : undefined;
  if (text !== "") return signature ? { type: "thinking", text, signature } : { type: "thinking", text };
  return signature ? { type: "redacted_thinking", signature } : undefined;
}
