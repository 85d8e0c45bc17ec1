/**
 * The most calls a request can make of the provider tools billed per call beside their
 * tokens (docs/api.md, "Reservation"): web searches (Anthropic `web_search_*`, OpenAI
 * Responses `web_search` / `web_search_preview`, Gemini `googleSearch` grounding) and
 * file searches (`file_search`); a grounded Gemini call is one grounded prompt.
 * An Anthropic tool's `max_uses` bounds its searches, and a Responses call's
 * `max_tool_calls` bounds all its built-in tool calls; a tool without either can search
 * as often as the model wants, so its calls are reserved at DEFAULT_TOOL_CALLS (a call
 * that searches more is still charged every search the upstream reports).
 */
import type { ChatPrice } from "./pricing/schema.ts";

/** Calls reserved for a per-call tool that names no limit of its own. */
export const DEFAULT_TOOL_CALLS = 20;

type Json = Record<string, unknown>;

/** Gemini tool members that ground an answer in Google Search (camelCase and snake_case). */
const GEMINI_SEARCH_MEMBERS = ["googleSearch", "google_search", "googleSearchRetrieval", "google_search_retrieval"];

const isObject = (value: unknown): value is Json => value !== null && typeof value === "object" && !Array.isArray(value);

/** A positive whole limit, or undefined. */
function limit(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) && value >= 1 ? Math.floor(value) : undefined;
}

/** Per-call tool calls a request can make: web searches and file searches. */
export function toolCallBound(json: Readonly<Json> | undefined): { webSearches: number; fileSearches: number; groundedPrompts: number } {
  let webSearches = 0;
  let fileSearches = 0;
  let groundedPrompts = 0;
  const tools = json?.tools;
  if (Array.isArray(tools)) {
    for (const tool of tools) {
      if (!isObject(tool)) continue;
      if (GEMINI_SEARCH_MEMBERS.some((member) => tool[member] !== undefined && tool[member] !== null)) {
        webSearches += DEFAULT_TOOL_CALLS;
        groundedPrompts = 1;
        continue;
      }
      if (typeof tool.type !== "string") continue;
      const calls = Math.min(limit(tool.max_uses) ?? DEFAULT_TOOL_CALLS, DEFAULT_TOOL_CALLS * 50);
      if (tool.type.startsWith("web_search")) webSearches += calls;
      else if (tool.type === "file_search") fileSearches += calls;
    }
  }
  // A Chat Completions search model (asked with web_search_options) searches once before it answers.
  if (isObject(json?.web_search_options)) webSearches += 1;
  const all = limit(json?.max_tool_calls);
  if (all !== undefined) {
    webSearches = Math.min(webSearches, all);
    fileSearches = Math.min(fileSearches, all);
  }
  return { webSearches, fileSearches, groundedPrompts };
}

/**
 * The usage a Chat Completions search model's answer is charged: its answer reports no
 * search count, yet the model searched once before answering (asked with
 * `web_search_options`); a call that failed reported no tokens and is charged nothing.
 */
export function withChatSearch<U extends { prompt: number; completion: number; webSearches?: number }>(usage: U, json: Readonly<Json> | undefined): U {
  if (!isObject(json?.web_search_options) || usage.webSearches !== undefined || usage.prompt + usage.completion === 0) return usage;
  return { ...usage, webSearches: 1 };
}

/** What a request's per-call tools can cost at most, in USD (× Rates by the caller). */
export function toolCallsWorstUsd(price: ChatPrice, json: Readonly<Json> | undefined): number {
  if (price.WebSearch === undefined && price.FileSearch === undefined && price.GroundedPrompt === undefined) return 0;
  const bound = toolCallBound(json);
  return bound.webSearches * (price.WebSearch ?? 0) + bound.fileSearches * (price.FileSearch ?? 0) + bound.groundedPrompts * (price.GroundedPrompt ?? 0);
}
