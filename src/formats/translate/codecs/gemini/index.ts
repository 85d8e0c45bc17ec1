/**
 * The Gemini generateContent codec (`gemini-generate`): a Gemini client's requests read
 * into the shared model and its answers, streams and errors written; and the same model
 * written to, and read back from, a Gemini upstream. docs/translation.md has the
 * field-by-field table.
 */
import type { Codec } from "../../codec.ts";
import { geminiTarget } from "../../targets.ts";
import { readGeminiAnswer } from "./answer-read.ts";
import { writeGeminiAnswer } from "./answer-write.ts";
import { readGeminiError, writeGeminiError } from "./errors.ts";
import { NAME } from "./names.ts";
import { readGeminiRequest } from "./request-read.ts";
import { writeGeminiRequest } from "./request-write.ts";
import { geminiStreamReader } from "./stream-read.ts";
import { geminiStreamWriter } from "./stream-write.ts";

export const geminiCodec: Codec = {
  wire: "gemini-generate",
  name: NAME,
  readRequest: readGeminiRequest,
  writeAnswer: writeGeminiAnswer,
  streamWriter: geminiStreamWriter,
  writeError: writeGeminiError,
  target: geminiTarget,
  writeRequest: writeGeminiRequest,
  readAnswer: readGeminiAnswer,
  streamReader: geminiStreamReader,
  readError: readGeminiError,
};
