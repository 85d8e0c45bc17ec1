import { HttpError } from "../core/errors.ts";
import { redact, redactSecret } from "../core/redact.ts";
import type { Family } from "../formats/family.ts";
import { foreignGoogleErrorMessage } from "../formats/google-errors.ts";
import type { Translator } from "../formats/translate/translator.ts";
import { errorResponse } from "../http/envelopes.ts";
import { translatedError } from "./attempt-errors.ts";
import { MAX_ERROR_BODY_BYTES, readBoundedText } from "./bounded-read.ts";
import { clientResponseHeaders } from "./headers.ts";
import { isDeadKeyAnswer, isModelMissingOnKey } from "../routing/provider-errors.ts";

/**
 * An upstream's answer to the client's own mistake (400, 404, 413, 422…), passed on: its
 * error body read within bounds (small, and one that stalls must not hold the call),
 * every spelling of the key's secret taken out (some upstreams echo the credential back),
 * in the client's format (translated when the key speaks another). A body past the bound,
 * one that stalls or one cut while read is replaced by words of the router's own, in the
 * client's envelope, with the same status. A body that says the key itself is dead (out
 * of credit, not valid: `provider-errors.ts`) is not the client's mistake: `deadKey` says
 * so, and the caller tries another key instead of relaying it. A body that says this key
 * lacks the model though others may have it (`isModelMissingOnKey`) is `elsewhere`: the
 * caller tries another key, and relays this answer only when none has the model.
 */
export async function relayedMistake(
  response: Response,
  options: {
    family: Family;
    translator: Translator | undefined;
    secrets: string | readonly string[];
    idleMs: number;
    /** Cuts the connection when the body goes silent (the attempt's abort). */
    onIdle: () => void;
    /** Whether the read ended because `onIdle` cut it. */
    stalled: () => boolean;
  },
): Promise<{ answer: Response; message: string; deadKey?: true; elsewhere?: true }> {
  const status = response.status;
  const read = await readBoundedText(response, MAX_ERROR_BODY_BYTES, options.idleMs, options.onIdle).then(
    (body): { body: string } | "over" => (body === undefined ? "over" : { body }),
    () => (options.stalled() ? ("stalled" as const) : ("cut" as const)),
  );
  if (typeof read === "object") {
    const message = redact(redactSecret(read.body, options.secrets));
    if (isDeadKeyAnswer(status, read.body)) return { answer: new Response(null, { status }), message, deadKey: true };
    const foreign = options.translator ? undefined : foreignGoogleErrorMessage(options.family, message);
    const answer = options.translator
      ? translatedError(options.translator, status, message)
      : foreign !== undefined
        ? errorResponse(options.family, new HttpError(kindOf(status), foreign, { status }))
        : new Response(message, { status, headers: clientResponseHeaders(response.headers) });
    return isModelMissingOnKey(status, read.body) ? { answer, message, elsewhere: true } : { answer, message };
  }
  const message =
    read === "over"
      ? `The upstream answered ${status} with an error body over ${MAX_ERROR_BODY_BYTES / 1024 / 1024} MiB, which is not relayed.`
      : read === "stalled"
        ? `The upstream answered ${status}, and its error body stopped arriving for ${Math.round(options.idleMs / 1000)} s; it was not read.`
        : `The upstream answered ${status}, and its error body broke off before it was read.`;
  return { answer: errorResponse(options.family, new HttpError(kindOf(status), message, { status })), message };
}

const kindOf = (status: number) => (status === 404 ? "not_found" : status === 413 ? "too_large" : status === 409 ? "conflict" : "invalid_request");
