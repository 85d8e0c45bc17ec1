/**
 * A Translator made of two codecs: the client's request read into the shared model and
 * written in the upstream's format; the upstream's answer, stream and errors read back
 * into the model and written in the client's.
 */
import type { JsonObject } from "../json.ts";
import type { Codec } from "./codec.ts";
import { EMPTY } from "./sse-write.ts";
import type { StreamTranslator, Translator } from "./translator.ts";

const encoder = new TextEncoder();
const bytes = (text: string): Uint8Array => (text === "" ? EMPTY : encoder.encode(text));

export function compose(client: Codec, upstream: Codec): Translator {
  return {
    client: client.wire,
    upstream: upstream.wire,
    upstreamTarget: (model, stream) => upstream.target(model, stream),
    request(body: JsonObject, context) {
      const model = context.model ?? (typeof body.model === "string" ? body.model : undefined);
      const stream = context.stream ?? body.stream === true;
      return upstream.writeRequest(client.readRequest(body, { model, stream, upstream: upstream.name }), context);
    },
    response: (body, context = {}) => client.writeAnswer(upstream.readAnswer(body), context),
    stream(context = {}): StreamTranslator {
      const reader = upstream.streamReader();
      const writer = client.streamWriter(context);
      return {
        push: (event) => bytes(writer.write(reader.push(event))),
        end: () => bytes(writer.write(reader.end()) + writer.end()),
        fail: (error) => bytes(writer.fail(error)),
      };
    },
    error: (status, body) => client.writeError(upstream.readError(status, body)),
  };
}
