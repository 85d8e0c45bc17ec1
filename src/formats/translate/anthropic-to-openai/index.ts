/** An Anthropic Messages client served by an OpenAI Chat Completions upstream. */
import { anthropic } from "../../anthropic/index.ts";
import { errorTranslator } from "../errors.ts";
import { fixedTarget } from "../targets.ts";
import type { Translator } from "../translator.ts";
import { toOpenaiChatRequest } from "./request.ts";
import { toAnthropicMessage } from "./response.ts";
import { anthropicStreamFromOpenai } from "./stream.ts";

export const anthropicToOpenai: Translator = {
  client: "anthropic-messages",
  upstream: "openai-chat",
  upstreamTarget: fixedTarget("/v1/chat/completions"),
  request: toOpenaiChatRequest,
  response: (body) => toAnthropicMessage(body),
  stream: () => anthropicStreamFromOpenai(),
  error: errorTranslator(anthropic),
};
