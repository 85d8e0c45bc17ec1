/** The API family a path belongs to decides the error envelope and the key headers. */
export type Family = "openai" | "anthropic" | "gemini";

/** Gemini methods on a model path, as the Google SDKs call them (`/v1/models/m:generateContent`). */
const GEMINI_MODEL_METHOD = /^\/v1(?:beta)?\/models\/[^/]+:[A-Za-z]+$/;

export function familyOf(path: string): Family {
  if (path.startsWith("/v1/messages")) return "anthropic";
  if (path.startsWith("/v1beta/") || GEMINI_MODEL_METHOD.test(path)) return "gemini";
  return "openai";
}

/**
 * The family of a request: its path's, except on the model-list paths the three SDKs
 * share (`GET /v1/models[/{id}]`), where the client tells itself by its headers: the
 * Anthropic SDK always sends `anthropic-version`, the Google SDK `x-goog-api-key`.
 */
export function familyOfRequest(headers: Headers, path: string): Family {
  if ((path === "/v1/models" || path.startsWith("/v1/models/")) && !GEMINI_MODEL_METHOD.test(path)) {
    if (headers.has("anthropic-version")) return "anthropic";
    if (headers.has("x-goog-api-key") && !headers.has("authorization")) return "gemini";
  }
  return familyOf(path);
}
