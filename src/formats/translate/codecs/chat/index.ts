/** The OpenAI Chat Completions codec: its requests, answers, streams and errors ⇄ the shared model. */
import type { Codec } from "../../codec.ts";
import { fixedTarget } from "../../targets.ts";
import { readChatAnswer, writeChatAnswer } from "./answer.ts";
import { readChatError, writeChatError } from "./errors.ts";
import { CHAT } from "./name.ts";
import { readChatRequest } from "./read-request.ts";
import { chatStreamReader } from "./stream-read.ts";
import { chatStreamWriter } from "./stream-write.ts";
import { writeChatRequest } from "./write-request.ts";

export const chatCodec: Codec = {
  wire: "openai-chat",
  name: CHAT,
  readRequest: readChatRequest,
  writeAnswer: writeChatAnswer,
  streamWriter: chatStreamWriter,
  writeError: writeChatError,
  target: fixedTarget("/v1/chat/completions"),
  writeRequest: writeChatRequest,
  readAnswer: readChatAnswer,
  streamReader: chatStreamReader,
  readError: readChatError,
};
