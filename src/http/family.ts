/** The API family a path belongs to decides the error envelope and the key headers. */
export type Family = "openai" | "anthropic" | "gemini";

/** Gemini methods on a model path, as the Google SDKs call them (`/v1/models/m:generateContent`). */
const GEMINI_MODEL_METHOD = /^\/v1(?:beta)?\/models\/[^/]+:[A-Za-z]+$/;

export function familyOf(path: string): Family {
  if (path.startsWith("/v1/messages")) return "anthropic";
  if (path.startsWith("/v1beta/") || GEMINI_MODEL_METHOD.test(path)) return "gemini";
  return "openai";
}
