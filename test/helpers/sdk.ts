import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import OpenAI from "openai";

/** The official SDKs, changed only in base URL and key, as a user would configure them. */
export function openaiClient(routerUrl: string, key: string): OpenAI {
  return new OpenAI({ baseURL: `${routerUrl}/v1`, apiKey: key, maxRetries: 0 });
}

export function anthropicClient(routerUrl: string, key: string): Anthropic {
  return new Anthropic({ baseURL: routerUrl, apiKey: key, maxRetries: 0 });
}

export function geminiClient(routerUrl: string, key: string): GoogleGenAI {
  return new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: routerUrl } });
}
