/** The Anthropic Messages codec: Anthropic's wire read into and written out of the shared model (ir.ts). */
import type { Codec } from "../../codec.ts";
import { fixedTarget } from "../../targets.ts";
import { readAnthropicAnswer, writeAnthropicAnswer } from "./answer.ts";
import { NAME, WIRE } from "./blocks.ts";
import { readAnthropicError, writeAnthropicError } from "./errors.ts";
import { readAnthropicRequest } from "./read-request.ts";
import { anthropicStreamReader } from "./stream-read.ts";
import { anthropicStreamWriter } from "./stream-write.ts";
import { writeAnthropicRequest } from "./write-request.ts";

export const anthropicCodec: Codec = {
  wire: WIRE,
  name: NAME,
  readRequest: readAnthropicRequest,
  writeAnswer: (answer) => writeAnthropicAnswer(answer),
  streamWriter: () => anthropicStreamWriter(),
  writeError: writeAnthropicError,
  target: fixedTarget("/v1/messages"),
  writeRequest: writeAnthropicRequest,
  readAnswer: readAnthropicAnswer,
  streamReader: anthropicStreamReader,
  readError: readAnthropicError,
};
