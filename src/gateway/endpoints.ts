import type { Family } from "../http/family.ts";

/** What the gateway needs to know about one model endpoint. */
export interface Endpoint {
  family: Family;
  /** Canonical path sent upstream (aliases map to it). */
  path: string;
  /** Where the model name is: the JSON body's `model`, or the Gemini path. */
  model: "body" | "path" | "none";
  /** Safe to replay on another key after the upstream may have seen the body. */
  idempotent: boolean;
  /** OpenAI chat-style streams need `stream_options.include_usage` to report usage. */
  injectStreamUsage?: boolean;
  /**
   * How the call is priced: default tokens by ChatPricing; `free` not charged (token
   * counting); `image` per image by ImgPricing (or tokens when only ChatPricing has the
   * model); `audio` per minute by AudioPricing (or tokens); `speech` per minute of the
   * generated audio; `video` per second by VideoPricing.
   */
  billing?: "free" | "image" | "audio" | "speech" | "video";
  /**
   * A token count (`count_tokens`, `countTokens`): not usage. It obeys access rules and
   * request windows, never credit, spend or token limits, and leaves no usage row.
   */
  counting?: true;
  /** The input is held upstream (a realtime session's conversation): reserved as the model's whole context window. */
  statefulInput?: true;
  /** An embedding: its answer is vectors, never completion tokens (not even estimated ones). */
  embedding?: true;
  /** The body is multipart/form-data (spooled to disk, model read from its fields). */
  multipart?: boolean;
  /** The answer is binary and streamed back untouched (speech audio). */
  binary?: boolean;
  /** The model the upstream assumes when the client names none (used for routing and pricing only). */
  defaultModel?: string;
  /** The call creates an upstream object whose id binds it to the key that served it. */
  creates?: "response" | "video" | "file" | "thread" | "run" | "client_secret";
}

export const OPENAI_ENDPOINTS: Record<string, Endpoint> = {
  "/v1/chat/completions": { family: "openai", path: "/v1/chat/completions", model: "body", idempotent: true, injectStreamUsage: true },
  "/v1/completions": { family: "openai", path: "/v1/completions", model: "body", idempotent: true, injectStreamUsage: true },
  "/v1/responses": { family: "openai", path: "/v1/responses", model: "body", idempotent: true, creates: "response" },
  "/v1/responses/compact": { family: "openai", path: "/v1/responses/compact", model: "body", idempotent: true },
  "/v1/embeddings": { family: "openai", path: "/v1/embeddings", model: "body", idempotent: true, embedding: true },
  "/v1/moderations": { family: "openai", path: "/v1/moderations", model: "body", idempotent: true, defaultModel: "omni-moderation-latest" },
  "/v1/images/generations": { family: "openai", path: "/v1/images/generations", model: "body", idempotent: false, billing: "image", defaultModel: "dall-e-2" },
  "/v1/images/edits": { family: "openai", path: "/v1/images/edits", model: "body", idempotent: false, billing: "image", multipart: true, defaultModel: "dall-e-2" },
  "/v1/images/variations": { family: "openai", path: "/v1/images/variations", model: "body", idempotent: false, billing: "image", multipart: true, defaultModel: "dall-e-2" },
  "/v1/audio/transcriptions": { family: "openai", path: "/v1/audio/transcriptions", model: "body", idempotent: true, billing: "audio", multipart: true },
  "/v1/audio/translations": { family: "openai", path: "/v1/audio/translations", model: "body", idempotent: true, billing: "audio", multipart: true },
  "/v1/audio/speech": { family: "openai", path: "/v1/audio/speech", model: "body", idempotent: true, billing: "speech", binary: true },
  "/v1/videos/generations": { family: "openai", path: "/v1/videos/generations", model: "body", idempotent: false, billing: "video", creates: "video" },
};

/** Compatibility aliases (spec 9) for integrations that omit `/v1`. */
export const OPENAI_ALIASES: Record<string, string> = {
  "/chat/completions": "/v1/chat/completions",
  "/responses": "/v1/responses",
  "/embeddings": "/v1/embeddings",
};

export const ANTHROPIC_ENDPOINTS: Record<string, Endpoint> = {
  "/v1/messages": { family: "anthropic", path: "/v1/messages", model: "body", idempotent: true },
  "/v1/messages/count_tokens": { family: "anthropic", path: "/v1/messages/count_tokens", model: "body", idempotent: true, billing: "free", counting: true },
};

/** Gemini methods served on `/v1beta/models/{model}:{method}` and `/v1/models/{model}:{method}`. */
export const GEMINI_METHODS = new Set(["generateContent", "streamGenerateContent", "countTokens", "embedContent", "batchEmbedContents"]);

export function geminiEndpoint(version: "v1" | "v1beta", method: string): Endpoint {
  return {
    family: "gemini",
    path: `/${version}/models`,
    model: "path",
    idempotent: true,
    ...(method === "countTokens" && { billing: "free" as const, counting: true as const }),
    ...((method === "embedContent" || method === "batchEmbedContents") && { embedding: true as const }),
  };
}
