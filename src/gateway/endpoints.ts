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
  /** `free`: not priced or charged (token counting); default: token-billed by ChatPricing. */
  billing?: "free";
}

export const OPENAI_ENDPOINTS: Record<string, Endpoint> = {
  "/v1/chat/completions": { family: "openai", path: "/v1/chat/completions", model: "body", idempotent: true, injectStreamUsage: true },
  "/v1/completions": { family: "openai", path: "/v1/completions", model: "body", idempotent: true, injectStreamUsage: true },
  "/v1/responses": { family: "openai", path: "/v1/responses", model: "body", idempotent: true },
  "/v1/responses/compact": { family: "openai", path: "/v1/responses/compact", model: "body", idempotent: true },
  "/v1/embeddings": { family: "openai", path: "/v1/embeddings", model: "body", idempotent: true },
  "/v1/moderations": { family: "openai", path: "/v1/moderations", model: "body", idempotent: true },
};

/** Compatibility aliases (spec 9) for integrations that omit `/v1`. */
export const OPENAI_ALIASES: Record<string, string> = {
  "/chat/completions": "/v1/chat/completions",
  "/responses": "/v1/responses",
  "/embeddings": "/v1/embeddings",
};

export const ANTHROPIC_ENDPOINTS: Record<string, Endpoint> = {
  "/v1/messages": { family: "anthropic", path: "/v1/messages", model: "body", idempotent: true },
  "/v1/messages/count_tokens": { family: "anthropic", path: "/v1/messages/count_tokens", model: "body", idempotent: true, billing: "free" },
};

/** Gemini methods served on `/v1beta/models/{model}:{method}` and `/v1/models/{model}:{method}`. */
export const GEMINI_METHODS = new Set(["generateContent", "streamGenerateContent", "countTokens", "embedContent", "batchEmbedContents"]);

export function geminiEndpoint(version: "v1" | "v1beta", method: string): Endpoint {
  return { family: "gemini", path: `/${version}/models`, model: "path", idempotent: true, ...(method === "countTokens" && { billing: "free" as const }) };
}
