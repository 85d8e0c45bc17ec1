/** The codec of each wire format that has one. */
import type { Codec } from "../codec.ts";
import type { Wire } from "../translator.ts";
import { geminiCodec } from "./gemini/index.ts";

const CODECS: Partial<Record<Wire, Codec>> = {
  "gemini-generate": geminiCodec,
};

export const codecOf = (wire: Wire): Codec | undefined => CODECS[wire];
