/** The OpenAI Responses wire (POST /v1/responses) as a codec of the shared translation model. */
import type { Codec } from "../../codec.ts";
import { fixedTarget } from "../../targets.ts";
import { readResponsesAnswer } from "./answer-read.ts";
import { writeResponsesAnswer } from "./answer-write.ts";
import { readResponsesError, writeResponsesError } from "./errors.ts";
import { NAME } from "./names.ts";
import { readResponsesRequest } from "./request-read.ts";
import { writeResponsesRequest } from "./request-write.ts";
import { responsesStreamReader } from "./stream-read.ts";
import { responsesStreamWriter } from "./stream-write.ts";

export const responsesCodec: Codec = {
  wire: "openai-responses",
  name: NAME,
  readRequest: readResponsesRequest,
  writeAnswer: writeResponsesAnswer,
  streamWriter: responsesStreamWriter,
  writeError: writeResponsesError,
  target: fixedTarget("/v1/responses"),
  writeRequest: writeResponsesRequest,
  readAnswer: readResponsesAnswer,
  streamReader: responsesStreamReader,
  readError: readResponsesError,
};
