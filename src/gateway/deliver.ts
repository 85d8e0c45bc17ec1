import type { Logger } from "../core/log.ts";
import { causeMessage, HttpError } from "../core/errors.ts";
import type { ServeConfig } from "../config.ts";
import { errorResponse } from "../http/envelopes.ts";
import type { RouterMetrics } from "../metrics/router-metrics.ts";
import type { Affinity } from "./affinity.ts";
import { answerQuantities, createdObjects, streamedObjects } from "./created-objects.ts";
import { clientResponseHeaders } from "./headers.ts";
import type { Answered, CallOutcome, Delivery, RelayInput, ServedRoute } from "./call-outcome.ts";
import { relayStream } from "./stream.ts";
import { rewriteStream } from "./translated-stream.ts";
import { clientWantsUsageChunk } from "./translation.ts";
import { countContent, estimateTokens } from "./usage/content-count.ts";
import { formatOf } from "../formats/registry.ts";
import { ZERO_USAGE, type Usage, type UsageSource } from "../formats/usage.ts";
import { DEFAULT_MAX_ANSWER_BYTES, readBoundedText } from "./bounded-read.ts";


/** A regular expression literal is a new object each time it is evaluated: these run per call. */
const JSON_TYPE = /\bjson\b/i;
const isJson = (response: Response) => JSON_TYPE.test(response.headers.get("content-type") ?? "");

const clientClosed = (family: RelayInput["call"]["family"]) => errorResponse(family, new HttpError("invalid_request", "Client closed the request", { status: 499 }));

/** Reads a relayed stream nobody receives to its end, so its usage is metered. */
async function drainUnread(body: ReadableStream<Uint8Array>): Promise<void> {
  const reader = body.getReader();
  try {
    while (!(await reader.read()).done);
  } catch {
    // The relay ended the stream (drain deadline): its end is recorded there.
  }
}

/**
 * The quantities recorded with an answered call. Calls priced per image, minute or
 * second always carry them (empty when the answer reported none, so billing falls
 * back to the request's own numbers): billing charges those units only for a call
 * the upstream answered, never for a failed or refused one, which records none.
 */
function answered(call: RelayInput["call"], quantities: Record<string, number> | undefined): Record<string, number> | undefined {
  const billing = call.endpoint.billing;
  return billing && billing !== "free" ? { ...quantities } : quantities;
}

/**
 * Hands a successful upstream answer to the client and says how the call ended:
 * streams relayed as they arrive with usage read on the side (their outcome known when
 * they end); binary bodies (speech, file downloads) passed through untouched; JSON
 * read whole for its usage, its priced quantities and the ids of objects it created
 * (bound to the serving key and the calling account).
 */
export interface DeliverDeps {
  readonly config: Pick<ServeConfig, "streamIdleTimeoutMs" | "drainTimeoutMs" | "maxAnswerBytes">;
  readonly metrics: RouterMetrics;
  readonly affinity: Affinity;
  readonly log: Logger;
}

export function createDeliver(deps: DeliverDeps) {
  const { config, metrics, affinity } = deps;
  // A binding that could not be stored leaves the object unreachable through the router:
  // said in the log; the answer itself still reaches the client.
  const remember = (input: RelayInput, route: ServedRoute, id: string, kind: Parameters<Affinity["remember"]>[1], tenantId: number) =>
    affinity
      .remember(id, kind, input.principal.account.id, route.keyId, kind === "client_secret" ? input.principal.account.keyHash : undefined, tenantId)
      .catch((error: unknown) => deps.log.error("an upstream object's key binding could not be stored", { kind, key: route.keyId, error: causeMessage(error) }));

  /** `tenantId`: the caller's tenant, where the objects the answer made are kept. */
  return async function deliver(input: RelayInput, answer: Answered, tenantId: number): Promise<Delivery> {
    const { response, peeked, route, started, controller, release, clientLeft } = answer;
    const { call } = input;
    const headers = clientResponseHeaders(response.headers);
    const translation = answer.translation;
    // A translated call is metered on the upstream's own answer, read as its format reads it.
    const upstreamFamily = translation?.upstream ?? call.family;
    const answerContext = translation && { created: Math.floor(started / 1000), usageChunk: clientWantsUsageChunk(call), clientRequest: call.json };
    /** The body's bytes, a multipart form's included (its file is not in `call.bytes`): an estimate's input. */
    const inputBytes = call.form?.size ?? call.bytes.byteLength;
    /** Priced by tokens (the model's plan has a token bound): an answer without counts is estimated in tokens, whatever the endpoint. */
    const tokenPriced = input.admission.plan.bound !== undefined;
    if (peeked) {
      // From here on a client leaving must not cut the upstream: it is drained for its usage.
      answer.detach();
      metrics.streamStarted();
      // A translated answer made no object at the upstream the client could name later.
      const watch = call.endpoint.creates && !translation
        ? (event: { event?: string; data: string }) => {
            for (const object of streamedObjects(call.endpoint, event)) void remember(input, route, object.id, object.kind, tenantId);
          }
        : undefined;
      const stream = relayStream(peeked.reader, peeked.first, {
        family: upstreamFamily,
        hideUsageChunk: call.hideUsageChunk,
        rewrite: translation && rewriteStream(translation.translator.stream(answerContext), config.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES),
        idleMs: config.streamIdleTimeoutMs,
        drainMs: config.drainTimeoutMs,
        maxEventChars: config.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES,
        abortUpstream: () => controller.abort(),
        watch,
      });
      const outcome = stream.ended.then((end): CallOutcome => {
        metrics.streamEnded();
        release();
        // Estimated when the upstream reported nothing: the body's bytes in, the delivered content out.
        const delivered = call.endpoint.embedding ? 0 : estimateTokens(end.contentBytes);
        // The searches it showed were run, and billed, whether or not its counts came.
        let usage: Usage = end.usage ?? { ...ZERO_USAGE, prompt: estimateTokens(inputBytes), completion: delivered, ...end.calls };
        let source: UsageSource = end.usage ? "upstream" : "estimated";
        // A stream cut before its last counts (Anthropic's come in message_delta, after
        // message_start's placeholder of 1 output token) is charged at least what it delivered.
        // So is one whose upstream reported a failure inside it (Anthropic's overloaded_error).
        const short = end.ending !== "complete" || end.failed;
        if (end.usage && short && end.usage.completion < delivered) {
          usage = { ...end.usage, completion: delivered };
          source = "estimated";
        }
        const status = clientLeft || end.ending === "client_gone" ? 499 : !short ? 200 : end.ending === "timeout" ? 504 : 502;
        return { route, status, usage, source, started, extra: answered(call, undefined) };
      });
      if (clientLeft) {
        void drainUnread(stream.body);
        return { response: clientClosed(call.family), outcome };
      }
      return { response: new Response(stream.body, { status: response.status, headers }), outcome };
    }
    // A text answer of a call priced by tokens (a transcript asked as text, srt or vtt)
    // carries no counts: it is read whole below (a transcript is small) and estimated.
    if (call.endpoint.binary || (!isJson(response) && !tokenPriced)) {
      // Audio and file contents flow through untouched; their price does not depend on the bytes.
      // A priced call answered so reports nothing: speech is charged by its input's length,
      // a transcript asked as text, srt or vtt by its upload's size, estimates both.
      release();
      const priced = call.endpoint.billing !== undefined && call.endpoint.billing !== "free";
      const outcome: CallOutcome = { route, status: clientLeft ? 499 : response.status, usage: ZERO_USAGE, source: priced ? "estimated" : "upstream", started, extra: answered(call, undefined) };
      if (clientLeft) {
        await response.body?.cancel().catch(() => {});
        return { response: clientClosed(call.family), outcome };
      }
      return { response: new Response(response.body, { status: response.status, headers }), outcome };
    }
    let text: string;
    let parsed: unknown;
    if (answer.read) ({ text, parsed } = answer.read);
    else {
      try {
        // A text answer read for its estimate, within the same bounds as a JSON one.
        const read = await readBoundedText(response, config.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES, config.streamIdleTimeoutMs, () => controller.abort());
        if (read === undefined) throw new Error("answer too large");
        text = read;
      } catch {
        release();
        const gone = input.clientSignal.aborted;
        const outcome: CallOutcome = { route, status: gone ? 499 : 502, usage: ZERO_USAGE, source: "estimated", started };
        if (gone) return { response: clientClosed(call.family), outcome };
        return { response: errorResponse(call.family, new HttpError("upstream", "The upstream connection failed while answering", { code: "upstream_error" })), outcome };
      }
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
    }
    release();
    // The client may have left while the answer was read: its abort can arrive any time.
    const left = clientLeft || input.clientSignal.aborted;
    const status = left ? 499 : response.status;
    if (!translation) for (const object of createdObjects(call.endpoint, parsed)) await remember(input, route, object.id, object.kind, tenantId);
    const reported = formatOf(upstreamFamily).usageFromJson(parsed);
    const usage = reported && call.endpoint.embedding ? { ...reported, completion: 0, reasoning: 0 } : reported;
    const quantities = answerQuantities(parsed);
    let outcome: CallOutcome;
    if (usage) outcome = { route, status, usage, source: "upstream", started, extra: answered(call, quantities) };
    else if (call.endpoint.billing && call.endpoint.billing !== "free" && !tokenPriced) {
      // Priced per image, minute or second: no tokens to guess; the quantities are the usage.
      outcome = { route, status, usage: ZERO_USAGE, source: quantities ? "upstream" : "estimated", started, extra: answered(call, quantities) };
    } else {
      // Estimated: the body's bytes in, the answer's content (not its JSON) out; an
      // embedding's vectors are not generated text, so only its input counts.
      // A text that is not JSON (a transcript as text) is content from end to end.
      const bytes = new TextEncoder().encode(text);
      const completion = call.endpoint.embedding ? 0 : estimateTokens(parsed === undefined ? bytes.byteLength : countContent(bytes));
      outcome = { route, status, usage: { ...ZERO_USAGE, prompt: estimateTokens(inputBytes), completion }, source: "estimated", started, extra: quantities };
    }
    if (left) return { response: clientClosed(call.family), outcome };
    if (translation) return { response: Response.json(translation.translator.response(parsed, answerContext), { status: response.status }), outcome };
    return { response: new Response(text, { status: response.status, headers }), outcome };
  };
}

export type Deliver = ReturnType<typeof createDeliver>;
