/** The shared model's answer parts as Gemini candidate parts, for answers and stream chunks alike. */
import { isObject, type JsonObject } from "../../../json.ts";
import type { IrToolCall, Signature } from "../../ir.ts";

/** A signature Gemini can read back: only its own. */
export const geminiSignature = (signature: Signature | undefined) => (signature?.wire === "gemini-generate" ? signature.value : undefined);

export const textPart = (text: string): JsonObject => ({ text });

/** A thought, with its signature only when Gemini made it (another provider's would be refused if sent back). */
export function thoughtPart(text: string, signature?: Signature): JsonObject {
  const part: JsonObject = { text, thought: true };
  const value = geminiSignature(signature);
  if (value !== undefined) part.thoughtSignature = value;
  return part;
}

/**
 * A call as Gemini writes it: `args` an object. Arguments that are not a JSON object
 * (an upstream's malformed output) are written as `{}`, since Gemini's clients read
 * `args` as an object.
 */
export function functionCallPart(call: Pick<IrToolCall, "id" | "name" | "arguments" | "signature">): JsonObject {
  const part: JsonObject = { functionCall: { id: call.id, name: call.name, args: argsObject(call.arguments) } };
  const value = geminiSignature(call.signature);
  if (value !== undefined) part.thoughtSignature = value;
  return part;
}

function argsObject(text: string): JsonObject {
  try {
    const value: unknown = JSON.parse(text);
    return isObject(value) ? value : {};
  } catch {
    return {};
  }
}
