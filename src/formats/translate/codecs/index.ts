/** The codec of each wire format that has one. */
import type { Codec } from "../codec.ts";
import type { Wire } from "../translator.ts";
import { chatCodec } from "./chat/index.ts";
import { geminiCodec } from "./gemini/index.ts";
import { responsesCodec } from "./responses/index.ts";

const CODECS: Partial<Record<Wire, Codec>> = {
  "openai-chat": chatCodec,
  "openai-responses": responsesCodec,
  "gemini-generate": geminiCodec,
};

export const codecOf = (wire: Wire): Codec | undefined => CODECS[wire];
