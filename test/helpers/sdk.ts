import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import OpenAI from "openai";
import AnthropicV0 from "anthropic-v0";
import { GoogleGenAI as GoogleGenAIV3 } from "genai-v3";
import OpenAIV7 from "openai-v7";

/**
 * The official SDKs, changed only in base URL and key, as a user would configure
 * them. Two majors of each are pinned side by side (npm aliases) because they call
 * differently: anthropic 0.x sends x-api-key and 1.x Bearer; genai 2.x calls
 * /v1beta/... and 3.x /v1/...
 */
export function openaiClient(routerUrl: string, key: string): OpenAI {
  return new OpenAI({ baseURL: `${routerUrl}/v1`, apiKey: key, maxRetries: 0 });
}

export function openaiV7Client(routerUrl: string, key: string): OpenAIV7 {
  return new OpenAIV7({ baseURL: `${routerUrl}/v1`, apiKey: key, maxRetries: 0 });
}

export function anthropicClient(routerUrl: string, key: string): Anthropic {
  return new Anthropic({ baseURL: routerUrl, apiKey: key, maxRetries: 0 });
}

export function anthropicV0Client(routerUrl: string, key: string): AnthropicV0 {
  return new AnthropicV0({ baseURL: routerUrl, apiKey: key, maxRetries: 0 });
}

export function geminiClient(routerUrl: string, key: string): GoogleGenAI {
  return new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: routerUrl } });
}

export function geminiV3Client(routerUrl: string, key: string): GoogleGenAIV3 {
  return new GoogleGenAIV3({ apiKey: key, httpOptions: { baseUrl: routerUrl } });
}
