/**
 * The API families clients speak: each is a folder of `src/formats/` (its paths, key
 * header, error envelope, call reading, usage and model lists), found through
 * `registry.ts`. A family is what a client's SDK is; the wire formats it carries
 * (OpenAI Chat Completions and Responses are both `openai`) are its module's business.
 */
export type Family = "openai" | "anthropic" | "gemini";
