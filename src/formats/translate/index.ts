/** The translators, by client and upstream wire format: each pair made of its two codecs. */
import { codecOf } from "./codecs/index.ts";
import { compose } from "./compose.ts";
import type { Translator, Wire } from "./translator.ts";

/** The translator from a client's format to an upstream's; undefined for a format to itself (a passthrough). */
export function translatorFor(client: Wire, upstream: Wire): Translator | undefined {
  return client === upstream ? undefined : compose(codecOf(client), codecOf(upstream));
}
