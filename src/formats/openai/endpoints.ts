import type { Endpoint } from "../format.ts";

const endpoint = (path: string, fields: Omit<Endpoint, "family" | "path" | "model"> & { model?: Endpoint["model"] }): Endpoint => ({
  family: "openai",
  path,
  model: "body",
  ...fields,
});

/** How Chat Completions bound their output: the deprecated spelling is still read by OpenAI and compatible servers. */
const CHAT_OUTPUT = ["max_tokens", "max_completion_tokens"] as const;
const RESPONSES_OUTPUT = ["max_output_tokens"] as const;

/** The OpenAI model endpoints (spec 4.5). */
export const OPENAI_ENDPOINTS: Record<string, Endpoint> = {
  "/v1/chat/completions": endpoint("/v1/chat/completions", { idempotent: true, injectStreamUsage: true, outputLimit: CHAT_OUTPUT }),
  "/v1/completions": endpoint("/v1/completions", { idempotent: true, injectStreamUsage: true, outputLimit: ["max_tokens"] }),
  "/v1/responses": endpoint("/v1/responses", { idempotent: true, creates: "response", continues: true, outputLimit: RESPONSES_OUTPUT }),
  "/v1/responses/compact": endpoint("/v1/responses/compact", { idempotent: true, continues: true, outputLimit: RESPONSES_OUTPUT }),
  "/v1/embeddings": endpoint("/v1/embeddings", { idempotent: true, embedding: true }),
  "/v1/moderations": endpoint("/v1/moderations", { idempotent: true, defaultModel: "omni-moderation-latest" }),
  "/v1/images/generations": endpoint("/v1/images/generations", { idempotent: false, billing: "image", defaultModel: "dall-e-2" }),
  "/v1/images/edits": endpoint("/v1/images/edits", { idempotent: false, billing: "image", multipart: true, defaultModel: "dall-e-2" }),
  "/v1/images/variations": endpoint("/v1/images/variations", { idempotent: false, billing: "image", multipart: true, defaultModel: "dall-e-2" }),
  "/v1/audio/transcriptions": endpoint("/v1/audio/transcriptions", { idempotent: true, billing: "audio", multipart: true }),
  "/v1/audio/translations": endpoint("/v1/audio/translations", { idempotent: true, billing: "audio", multipart: true }),
  "/v1/audio/speech": endpoint("/v1/audio/speech", { idempotent: true, billing: "speech", binary: true }),
  "/v1/videos/generations": endpoint("/v1/videos/generations", { idempotent: false, billing: "video", creates: "video" }),
};

/** Compatibility aliases (spec 9) for integrations that omit `/v1`. */
export const OPENAI_ALIASES: Record<string, string> = {
  "/chat/completions": "/v1/chat/completions",
  "/responses": "/v1/responses",
  "/embeddings": "/v1/embeddings",
};
