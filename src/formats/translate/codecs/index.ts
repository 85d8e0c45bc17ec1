/** The codec of each wire format that has one. */
import type { Codec } from "../codec.ts";
import type { Wire } from "../translator.ts";
import { anthropicCodec } from "./anthropic/index.ts";

const CODECS: Partial<Record<Wire, Codec>> = {
  "anthropic-messages": anthropicCodec,
};

export const codecOf = (wire: Wire): Codec | undefined => CODECS[wire];
