/** Where translated requests go, by upstream format. */
import type { UpstreamTarget } from "./translator.ts";

/** A format with one path for every call (Chat Completions, Responses, Messages). */
export const fixedTarget =
  (path: string) =>
  (): UpstreamTarget => ({ path, search: "" });

/**
 * Gemini names the model and whether to stream in the path; its stream is asked for as
 * SSE (`alt=sse`), the form the router's stream reader and usage tap read.
 */
export const geminiTarget = (model: string | undefined, stream: boolean): UpstreamTarget => ({
  path: `/v1beta/models/${encodeURIComponent(model ?? "")}:${stream ? "streamGenerateContent" : "generateContent"}`,
  search: stream ? "?alt=sse" : "",
});
