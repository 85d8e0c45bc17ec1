/** The codec of each wire format that has one. */
import type { Codec } from "../codec.ts";
import type { Wire } from "../translator.ts";
import { chatCodec } from "./chat/index.ts";
import { responsesCodec } from "./responses/index.ts";

const CODECS: Partial<Record<Wire, Codec>> = {
  "openai-chat": chatCodec,
  "openai-responses": responsesCodec,
};

export const codecOf = (wire: Wire): Codec | undefined => CODECS[wire];
