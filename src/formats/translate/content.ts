/** Content pieces both directions convert: images, PDF documents and plain text. */
import type { JsonObject } from "../json.ts";

const DATA_URL = /^data:([^;,]+);base64,(.*)$/s;

/** A `data:` URL split into its media type and base64 payload, or undefined for any other URL. */
export function parseDataUrl(url: string): { mediaType: string; data: string } | undefined {
  const match = DATA_URL.exec(url);
  return match ? { mediaType: match[1]!, data: match[2]! } : undefined;
}

export const dataUrl = (mediaType: string, data: string) => `data:${mediaType};base64,${data}`;

/** The text of a content that is a string or an array of text parts/blocks (others skipped). */
export function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  let text = "";
  for (const part of content as JsonObject[]) if (part?.type === "text" && typeof part.text === "string") text += part.text;
  return text;
}
