/** An OpenAI Chat Completions client served by an Anthropic Messages upstream. */
import { openai } from "../../openai/index.ts";
import { errorTranslator } from "../errors.ts";
import { fixedTarget } from "../targets.ts";
import type { Translator } from "../translator.ts";
import { toAnthropicRequest } from "./request.ts";
import { toOpenaiChatCompletion } from "./response.ts";
import { openaiStreamFromAnthropic } from "./stream.ts";

/** Anthropic's 529 "overloaded" is not an HTTP status OpenAI clients know: it reads as 503. */
const openaiStatus = (status: number) => (status === 529 ? 503 : status);

export const openaiToAnthropic: Translator = {
  client: "openai-chat",
  upstream: "anthropic-messages",
  upstreamTarget: fixedTarget("/v1/messages"),
  request: toAnthropicRequest,
  response: toOpenaiChatCompletion,
  stream: openaiStreamFromAnthropic,
  error: errorTranslator(openai, openaiStatus),
};
