/** The translators, by client and upstream wire format. */
import { anthropicToOpenai } from "./anthropic-to-openai/index.ts";
import { openaiToAnthropic } from "./openai-to-anthropic/index.ts";
import type { Translator, Wire } from "./translator.ts";

const TRANSLATORS: readonly Translator[] = [anthropicToOpenai, openaiToAnthropic];

/** The translator from a client's format to an upstream's, or undefined when there is none (yet). */
export function translatorFor(client: Wire, upstream: Wire): Translator | undefined {
  return TRANSLATORS.find((t) => t.client === client && t.upstream === upstream);
}
