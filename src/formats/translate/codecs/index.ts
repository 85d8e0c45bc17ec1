/** The codec of each wire format. */
import type { Codec } from "../codec.ts";
import type { Wire } from "../translator.ts";
import { anthropicCodec } from "./anthropic/index.ts";
import { chatCodec } from "./chat/index.ts";
import { geminiCodec } from "./gemini/index.ts";
import { responsesCodec } from "./responses/index.ts";

const CODECS: Record<Wire, Codec> = {
  "openai-chat": chatCodec,
  "openai-responses": responsesCodec,
  "anthropic-messages": anthropicCodec,
  "gemini-generate": geminiCodec,
};

export const codecOf = (wire: Wire): Codec => CODECS[wire];
