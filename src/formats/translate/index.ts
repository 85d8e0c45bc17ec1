/** The translators, by client and upstream wire format. */
import { anthropicToOpenai } from "./anthropic-to-openai/index.ts";
import { codecOf } from "./codecs/index.ts";
import { compose } from "./compose.ts";
import { openaiToAnthropic } from "./openai-to-anthropic/index.ts";
import type { Translator, Wire } from "./translator.ts";

/** Translators written for one pair; every other pair is composed of its two codecs. */
const DIRECT: readonly Translator[] = [anthropicToOpenai, openaiToAnthropic];

/** The translator from a client's format to an upstream's, or undefined when there is none (yet). */
export function translatorFor(client: Wire, upstream: Wire): Translator | undefined {
  if (client === upstream) return undefined;
  const direct = DIRECT.find((t) => t.client === client && t.upstream === upstream);
  if (direct) return direct;
  const from = codecOf(client);
  const to = codecOf(upstream);
  return from && to ? compose(from, to) : undefined;
}
