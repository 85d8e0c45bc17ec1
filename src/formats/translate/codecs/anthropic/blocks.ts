/**
 * Anthropic content blocks ⇄ the shared model's parts: the pieces both directions of the
 * codec share (requests and answers, read and written).
 */
import type { JsonObject } from "../../../json.ts";
import type { IrPart, IrSource, Signature } from "../../ir.ts";

export const WIRE = "anthropic-messages";

/** The efforts Anthropic's `output_config.effort` accepts. */
export const EFFORTS: ReadonlySet<string> = new Set(["low", "medium", "high", "xhigh", "max"]);
export const NAME = "Anthropic Messages";

/** An Anthropic signature (thinking `signature`, redacted thinking `data`) as the model holds it. */
export const anthropicSignature = (value: string): Signature => ({ wire: WIRE, value });

/** The signature's value when Anthropic made it; undefined for another wire's (meaningless here). */
export const ownSignature = (signature: Signature | undefined): string | undefined =>
  signature?.wire === WIRE ? signature.value : undefined;

/** A tool call's JSON arguments as a parsed object, or undefined when they are not a JSON object ("" is an empty object). */
export function argumentsObject(args: string): JsonObject | undefined {
  if (args.trim() === "") return {};
  try {
    const value: unknown = JSON.parse(args);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as JsonObject) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * An image's media type as Anthropic names it: lower case, and `image/jpg` (unregistered,
 * but read by OpenAI and Gemini and written by many clients) as `image/jpeg`.
 */
export const anthropicImageType = (mediaType: string): string => {
  const type = mediaType.toLowerCase();
  return type === "image/jpg" ? "image/jpeg" : type;
};

/** An image source as Anthropic writes it; undefined for a source Anthropic images cannot have (plain text). */
export function imageSourceBlock(source: IrSource): JsonObject | undefined {
  switch (source.kind) {
    case "base64": return { type: "base64", media_type: anthropicImageType(source.mediaType), data: source.data };
    case "url": return { type: "url", url: source.url };
  }
  return undefined;
}

/**
 * A document source as Anthropic writes it: a base64 PDF, a PDF by URL, or plain text.
 * A base64 `text/plain` document (Gemini's inline text) is decoded into a text source,
 * the only way Anthropic takes text documents.
 */
export function documentSourceBlock(source: IrSource): JsonObject {
  switch (source.kind) {
    case "text": return { type: "text", media_type: "text/plain", data: source.text };
    case "url": return { type: "url", url: source.url };
    case "base64":
      if (source.mediaType === "text/plain") return { type: "text", media_type: "text/plain", data: Buffer.from(source.data, "base64").toString("utf8") };
      return { type: "base64", media_type: source.mediaType, data: source.data };
  }
}

/** A text, image or document part as an Anthropic block; undefined for the other parts. */
export function mediaBlock(part: IrPart): JsonObject | undefined {
  switch (part.type) {
    case "text": return { type: "text", text: part.text };
    case "image": {
      const source = imageSourceBlock(part.source);
      return source && { type: "image", source };
    }
    case "document": {
      const block: JsonObject = { type: "document", source: documentSourceBlock(part.source) };
      if (part.title !== undefined) block.title = part.title;
      return block;
    }
  }
  return undefined;
}

/** A thinking part as an Anthropic block: its signature when Anthropic made it, else "" (Anthropic's own field is required). */
export const thinkingBlock = (text: string, signature: Signature | undefined): JsonObject => ({
  type: "thinking",
  thinking: text,
  signature: ownSignature(signature) ?? "",
});
