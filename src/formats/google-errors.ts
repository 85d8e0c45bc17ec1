import type { Family } from "./family.ts";

/**
 * The message of an error in Google's envelope (`{"error":{"code":400,"message":…,
 * "status":"INVALID_ARGUMENT"}}`, or a one-element array of it), which Vertex answers
 * for its own refusals whatever the publisher's format (a Claude model's rawPredict, its
 * OpenAI-compatible endpoint): a client of another family gets it in its own envelope.
 * Undefined for a Gemini client (it reads Google's envelope as it is) and for a text
 * that is not such an error.
 */
export function foreignGoogleErrorMessage(family: Family, text: string): string | undefined {
  if (family === "gemini") return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (Array.isArray(parsed) && parsed.length === 1) parsed = parsed[0];
  const error = (parsed as { error?: { code?: unknown; status?: unknown; message?: unknown } } | null)?.error;
  if (!error || typeof error.code !== "number" || typeof error.status !== "string" || typeof error.message !== "string") return undefined;
  return error.message;
}
