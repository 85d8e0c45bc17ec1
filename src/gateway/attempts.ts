import { HttpError } from "../core/errors.ts";
import type { ServeConfig } from "../config.ts";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/log.ts";
import type { RouterMetrics } from "../metrics/router-metrics.ts";
import type { Tenant } from "../tenancy/tenants.ts";
import type { AddressGuard } from "../upstreams/address-policy.ts";
import type { Adapters } from "../upstreams/index.ts";
import { errorResponse } from "../http/envelopes.ts";
import { redact } from "../core/redact.ts";
import { isCredentialStatus, isKeyFault, isRedirectStatus, isRetryableStatus, nextStep, sameKeyBackoffMs, sameKeyMayRetry, type AttemptFailure } from "../routing/failover.ts";
import { adapterFor } from "../upstreams/index.ts";
import { upstreamCall } from "./call.ts";
import { retryAfterMs } from "./headers.ts";
import { ZERO_USAGE } from "../formats/usage.ts";
import type { AttemptsEnd, CallOutcome, PeekedStream, ReadAnswer, RelayInput } from "./call-outcome.ts";
import { readFirstEvent, readJsonAnswer } from "./answer-check.ts";
import { AddressRefusedError } from "../upstreams/address-policy.ts";
import { DEFAULT_MAX_OUTPUT_TOKENS } from "../metering/billing.ts";
import { finalError, keyGone, waitUnlessClientLeaves } from "./attempt-errors.ts";
import { callFit, localTokenCount, upstreamCalls, keyWakeMs, unservedFormat, unservedFormats, upstreamFamilyOf } from "./translation.ts";
import { createKeyChoice } from "./key-choice.ts";
import { formatOf } from "../formats/registry.ts";
import { MAX_MESSAGE, type AttemptFact } from "../metering/request-log.ts";
import { errorMessage, failureMessage, rateLimitFacts, thrownFailure } from "./attempt-facts.ts";
import { DEFAULT_MAX_ANSWER_BYTES } from "./bounded-read.ts";
import { relayedMistake } from "./relayed-mistake.ts";

class AttemptTimeout extends Error {}

const SUCCESS = Object.freeze({ kind: "success" as const });

/** Content types judged per answer (a regular expression literal is a new object each time it is evaluated). */
const JSON_TYPE = /\bjson\b/i;
const HTML_TYPE = /\btext\/html\b/i;
const isEventStream = (response: Response) => (response.headers.get("content-type") ?? "").includes("text/event-stream");

/** The attempts end with a response of their own: an error, a passed-on client mistake, a client that left. */
const ended = (response: Response, outcome: CallOutcome): AttemptsEnd => ({ delivery: { response, outcome } });

/**
 * Sends a model call upstream: picks a key of the routed Level, retries on another
 * key or the backup Level when an attempt fails before anything reached the client,
 * and ends with the attempt that answered (for delivery) or with the error to send.
 */
export interface AttemptDeps {
  readonly config: Pick<ServeConfig, "maxAttempts" | "drainTimeoutMs" | "firstByteTimeoutMs" | "streamIdleTimeoutMs" | "maxAnswerBytes">;
  readonly clock: Clock;
  readonly log: Logger;
  readonly adapters: Adapters;
  /** TLS options for upstream fetches (the public roots plus --upstream-ca-file). */
  readonly upstreamTls: { ca: string[] } | undefined;
  readonly addressGuard: Pick<AddressGuard, "check">;
  readonly metrics: Pick<RouterMetrics, "ttfb">;
}

/** The part of a tenant its attempts route over: keys, mappers and switch-over state. */
export type AttemptTenant = Pick<Tenant, "tenantId" | "settings" | "pool" | "switchOver">;

export function createAttempts(deps: AttemptDeps, tenant: AttemptTenant) {
  const { config, clock, log } = deps;
  const { settings, pool, switchOver } = tenant;
  const fetchTls = deps.upstreamTls ? { tls: deps.upstreamTls } : {};
  const maxAnswerBytes = config.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES;

  const { pick, pinned } = createKeyChoice({ clock, adapters: deps.adapters, settings, pool, switchOver });

  return async function attempts(input: RelayInput): Promise<AttemptsEnd> {
    /** The key of the attempt under way, let go if anything below throws (a State that fails mid-call). */
    let letGo: (() => void) | undefined;
    try {
      const started = clock.now();
      /** The request log's durations are measured on the monotonic clock: a test's manual clock stands still. */
      const callStart = performance.now();
      const { call } = input;
      const route = input.route;
      const upstream = upstreamCall(call, route.effectiveModel);
      const fit = callFit(call, route.effectiveModel);
      const upstreamOf = upstreamCalls(call, upstream, route.effectiveModel, input.admission.plan.bound?.output ?? DEFAULT_MAX_OUTPUT_TOKENS);
      const tried = new Set<number>();
      /** Keys whose last attempt may be repeated on them when no other key can take the call. */
      const retrySameKey = new Set<number>();
      let sameKeyRetries = 0;
      let lastFailure: { response?: Response; failure: AttemptFailure; retryAfter?: number } | undefined;
      let credentialRefreshed = false;
      /** The latest answer of a key that lacks the model, relayed when no other key has it. */
      let missing: { answer: Response; noted: AttemptFact; status: number; level: number; keyId: number; ttfbMs: number } | undefined;
      /** The reads started during admission serve the first choice only. */
      let ahead = input.ahead;
      const choose = () => {
        const early = ahead;
        ahead = undefined;
        return input.pinnedKeyId === undefined ? pick(route.level, tried, fit, upstreamOf, early) : pinned(input.pinnedKeyId, tried, upstream);
      };
      /** An error ending a call no attempt was made for: the router's own refusal, named in the request log. */
    const refusing = (error: HttpError) => ((input.trace.refusal = input.trace.attempts.length === 0 ? error.code : undefined), error);
    const clientClosed = (keyId?: number) =>
        ended(errorResponse(call.family, new HttpError("invalid_request", "Client closed the request", { status: 499 })), {
          route: { ...route, keyId },
          status: 499,
          usage: ZERO_USAGE,
          source: "estimated",
          started,
        });

      for (let attempt = 1; attempt <= config.maxAttempts; attempt++) {
        let chosen = await choose();
        if (!chosen && retrySameKey.size > 0) {
          // No other key can take the call: the key that failed transiently gets another
          // try after a short wait (a restarting upstream, a connection pool hiccup).
          await waitUnlessClientLeaves(sameKeyBackoffMs(sameKeyRetries++), input.clientSignal);
          if (input.clientSignal.aborted) return clientClosed();
          for (const id of retrySameKey) tried.delete(id);
          retrySameKey.clear();
          chosen = await choose();
        }
        if (!chosen) {
          if (input.pinnedKeyId !== undefined && !lastFailure && !missing) {
            return ended(errorResponse(call.family, refusing(keyGone())), { route, status: 503, usage: ZERO_USAGE, source: "upstream", started });
          }
          break;
        }
        const { key, translator, upstream: sent } = chosen;
        if (sent instanceof HttpError) {
          // The request cannot be carried to this key's format: nothing was sent, nothing is charged.
          await pool.release(key);
          if (chosen.probe) await switchOver.abandonProbe(chosen.level);
          return ended(errorResponse(call.family, sent), { route: { ...route, keyId: key.id }, status: sent.status, usage: ZERO_USAGE, source: "upstream", started, unsent: true });
        }
        const adapter = adapterFor(deps.adapters, key);
        const attemptStart = performance.now();
        const level = chosen.level;
        /** This attempt's line in the request log. */
        const note = (fact: Partial<AttemptFact>): AttemptFact => {
          const noted: AttemptFact = { keyId: key.id, keyName: key.name, level, durationMs: Math.round(performance.now() - attemptStart), answered: false, ...(translator && { translatedTo: translator.upstream }), ...fact };
          input.trace.attempts.push(noted);
          return noted;
        };
        /** When the upstream's first byte (a stream's first event) arrived. */
        let firstByteAt = attemptStart;
        const controller = new AbortController();
        /**
         * A client that leaves before the answer does not cut the upstream, which may
         * already be generating (and charging): it is read on for at most the drain time,
         * and what it used is charged (item 9 of issue 13).
         */
        let drainTimer: ReturnType<typeof setTimeout> | undefined;
        const onClientGone = () => {
          drainTimer ??= setTimeout(() => controller.abort(), config.drainTimeoutMs);
        };
        input.clientSignal.addEventListener("abort", onClientGone);
        const detach = () => input.clientSignal.removeEventListener("abort", onClientGone);
        let released = false;
        const release = () => {
          detach();
          clearTimeout(drainTimer);
          if (released) return;
          released = true;
          void pool.release(key);
        };
        letGo = () => {
          release();
          if (chosen.probe) void switchOver.abandonProbe(chosen.level).catch(() => {});
        };
        let failure: AttemptFailure | undefined;
        let response: Response | undefined;
        /** This attempt's own Retry-After: an earlier key's must not lengthen this key's sleep. */
        let retryAfter: number | undefined;
        let peeked: PeekedStream | undefined;
        /** Why a 2xx was not an answer, when it was not. */
        let nonAnswer: string | undefined;
        /** A JSON answer, read and judged. */
        let read: ReadAnswer | undefined;
        const timer = setTimeout(() => controller.abort(new AttemptTimeout()), config.firstByteTimeoutMs);
        /** What an upstream's words must not repeat: the key's secret, and what was minted from it. */
        let secrets: string | readonly string[] = key.secret;
        let sentCredentials: readonly string[] | undefined;
        try {
          const prepared = await adapter.prepare(key, sent, controller.signal);
          if (prepared.credentials) secrets = [key.secret, ...(sentCredentials = prepared.credentials)];
          // The secret goes only where the address policy allows, checked again at each
          // connection: a name may resolve elsewhere since the URL was saved.
          const refusal = await deps.addressGuard.check(prepared.url);
          if (refusal) throw new AddressRefusedError(refusal);
          const sentAt = performance.now();
          response = await fetch(prepared.url, {
            method: sent.method,
            headers: prepared.headers,
            body: prepared.body,
            signal: controller.signal,
            // Never follow a redirect: fetch would re-send the key's secret headers to the new host.
            redirect: "manual",
            // Our own timers bound the wait; Bun's socket idle limit must not cut a slow first token.
            timeout: false,
            ...fetchTls,
          } as BunFetchRequestInit);
          firstByteAt = performance.now();
          deps.metrics.ttfb.observe((firstByteAt - sentAt) / 1000, { family: call.family });
          if (response.ok && response.body && isEventStream(response)) {
            // Providers send a stream's headers at once and its first event when the model
            // has started: the first-byte limit runs until that first event, which must be
            // an answer. A stream that stalls, drops or errs before it is retried like an
            // upstream that never answered, before the client has seen anything.
            const reader = response.body.getReader();
            const first = await readFirstEvent(reader, maxAnswerBytes);
            firstByteAt = performance.now();
            if (first.judgement.answer) peeked = { reader, first: first.bytes.byteLength > 0 ? { done: false, value: first.bytes } : { done: true, value: undefined } };
            else {
              nonAnswer = first.judgement.why;
              reader.cancel().catch(() => {});
            }
          } else if (response.ok && !call.endpoint.binary) {
            // A JSON answer is read whole before anything goes to the client, so a 2xx
            // error object can still fail over. Its headers were its first byte.
            const type = response.headers.get("content-type") ?? "";
            if (JSON_TYPE.test(type)) {
              clearTimeout(timer);
              const { text, judgement } = await readJsonAnswer(response, maxAnswerBytes, config.streamIdleTimeoutMs, () => controller.abort(new AttemptTimeout()));
              if (judgement.answer) read = { text, parsed: judgement.parsed };
              else nonAnswer = judgement.why;
            } else if (HTML_TYPE.test(type)) nonAnswer = "an HTML page";
          }
        } catch (error) {
          // Nothing of this attempt reached the client: a stream that failed before its
          // first chunk is a failed attempt like any other.
          response = undefined;
          if (input.clientSignal.aborted) {
            note({ error: "client_closed" });
            release();
            // No verdict on the primary: the next call may probe it.
            if (chosen.probe) await switchOver.abandonProbe(chosen.level);
            return clientClosed(key.id);
          }
          failure = thrownFailure(error, controller.signal.reason instanceof AttemptTimeout);
          log.warn("upstream attempt failed", { req: input.requestId, key: key.id, key_level: chosen.level, failure: failure.kind, error: redact((error as Error).message) });
          note({ ...(failure.kind === "status" && { status: failure.status }), error: failure.kind, message: failure.kind === "timeout" ? `no first byte within ${config.firstByteTimeoutMs} ms` : failureMessage(error) });
        } finally {
          clearTimeout(timer);
        }

        if (response && response.ok && !nonAnswer) {
          // Bookkeeping of a success, not waited for: the State takes the verdict when
          // asked, and the answer need not wait for it (a failure to record is logged).
          void pool.report(key, SUCCESS);
          note({ status: response.status, answered: true });
          input.trace.ttfbMs = firstByteAt - callStart;
          switchOver.recordSuccess(chosen.level, chosen.probe).catch((error: unknown) =>
            log.error("a Level's recovery could not be recorded", { key_level: chosen.level, error: (error as Error).message }),
          );
          return {
            answered: {
              response,
              route: { effectiveModel: route.effectiveModel, level: chosen.level, keyId: key.id },
              started,
              peeked,
              read,
              controller,
              detach,
              release,
              clientLeft: input.clientSignal.aborted,
              translation: translator ? { translator, upstream: upstreamFamilyOf(translator) } : undefined,
            },
          };
        }

        if (response && nonAnswer) {
          failure = { kind: "non_answer" };
          await response.body?.cancel().catch(() => {});
          note({ status: response.status, error: "non_answer", message: `a ${response.status} with ${nonAnswer}` });
          log.warn("upstream attempt failed", { req: input.requestId, key: key.id, key_level: chosen.level, status: response.status, failure: `2xx with ${nonAnswer}` });
        } else if (response) {
          const status = response.status;
          if (isCredentialStatus(status) && adapter.refreshCredentials && !credentialRefreshed && adapter.refreshCredentials(key, sentCredentials)) {
            // A stale access token, not a bad key: one more try with a fresh one.
            credentialRefreshed = true;
            await response.body?.cancel().catch(() => {});
            note({ status, error: "status", message: "the access token was stale; retried with a fresh one" });
            release();
            if (chosen.probe) await switchOver.abandonProbe(chosen.level);
            tried.delete(key.id);
            attempt--;
            continue;
          }
          const mistake = !isRetryableStatus(status) && !isCredentialStatus(status) && !isRedirectStatus(status);
          const relayed = mistake
            ? await relayedMistake(response, { family: call.family, translator, secrets, idleMs: config.streamIdleTimeoutMs,
                onIdle: () => controller.abort(new AttemptTimeout()), stalled: () => controller.signal.reason instanceof AttemptTimeout })
            : undefined;
          if (relayed?.elsewhere) {
            // This key lacks the model (a resource without the deployment): another key may
            // have it, and when none does this answer is the client's. The key is not blamed.
            const noted = note({ status, error: "status", message: relayed.message.slice(0, MAX_MESSAGE) });
            missing = { answer: relayed.answer, noted, status, level: chosen.level, keyId: key.id, ttfbMs: firstByteAt - callStart };
            release();
            if (chosen.probe) await switchOver.abandonProbe(chosen.level);
            tried.add(key.id);
            continue;
          }
          if (relayed && !relayed.deadKey) {
            // The client's own mistake (400, 404, 413, 422…): pass the upstream's answer on.
            const { answer, message } = relayed;
            await pool.report(key, { kind: "success" });
            await switchOver.recordSuccess(chosen.level, chosen.probe);
            note({ status, answered: true, message: message.slice(0, MAX_MESSAGE) });
            input.trace.ttfbMs = firstByteAt - callStart;
            release();
            return ended(answer, { route: { effectiveModel: route.effectiveModel, level: chosen.level, keyId: key.id }, status, usage: ZERO_USAGE, source: "upstream", started });
          }
          failure = { kind: "status", status, ...(relayed && { deadKey: true as const }) };
          retryAfter = retryAfterMs(response.headers, clock.now());
          const noted = note({ status, error: "status", ...(relayed && { message: relayed.message.slice(0, MAX_MESSAGE) }) });
          // A redirect's body may repeat its Location, which may carry anything: not kept.
          if (isRedirectStatus(status)) await response.body?.cancel().catch(() => {});
          else if (status === 429) {
            // Only the body tells a spent quota from a rate limit, and Gemini says its wait
            // there: read (at most a second) before the key's verdict.
            const said = await rateLimitFacts(response, secrets);
            noted.message = said.message;
            if (said.deadKey) failure = { kind: "status", status, deadKey: true };
            retryAfter ??= said.retryAfterMs;
          } else if (!relayed) {
            // The error body is read for the log while the next key is tried: a slow body
            // must not hold the failover (it is read for at most a second either way).
            input.trace.reading.push(
              errorMessage(response, secrets).then((message) => {
                if (message !== undefined) noted.message = message;
              }),
            );
          }
          // The Location is not logged: a redirect may carry anything in its URL.
          log.warn("upstream attempt failed", { req: input.requestId, key: key.id, key_level: chosen.level, status });
        }

        if (failure!.kind === "blocked") {
          await pool.markUnusable(key, failure!.reason);
        } else if (isKeyFault(failure!)) {
          await pool.report(key, { kind: "credential" });
        } else {
          await pool.report(key, { kind: "retryable", retryAfterMs: retryAfter });
          await switchOver.recordError(chosen.level, clock.now());
        }
        if (chosen.probe) await switchOver.abandonProbe(chosen.level);
        lastFailure = { failure: failure!, retryAfter };
        tried.add(key.id);
        if (sameKeyMayRetry(failure!, call.endpoint.idempotent)) retrySameKey.add(key.id);
        release();
        // Nobody is waiting for another attempt.
        if (input.clientSignal.aborted) return clientClosed(key.id);
        if (nextStep(failure!, call.endpoint.idempotent, attempt, config.maxAttempts) === "give_up") break;
      }

      if (missing && !lastFailure) {
        // Every key tried lacked the model: the last one's answer says so, as the upstream put it.
        missing.noted.answered = true;
        input.trace.ttfbMs = missing.ttfbMs;
        return ended(missing.answer, { route: { effectiveModel: route.effectiveModel, level: missing.level, keyId: missing.keyId }, status: missing.status, usage: ZERO_USAGE, source: "upstream", started });
      }
      const spoken = lastFailure || input.pinnedKeyId !== undefined ? undefined : unservedFormats(settings.routing().switchOver, pool, route.level, fit);
      const count = formatOf(call.family).tokenCountAnswer;
      if (spoken && call.endpoint.counting && count) {
        // A count no key can make in the client's format is made here: free, and no usage.
        const tokens = localTokenCount(call);
        const response = new Response(JSON.stringify(count(tokens)), { status: 200, headers: { "content-type": "application/json", "x-router-count": "estimated" } });
        return ended(response, { route, status: 200, usage: { ...ZERO_USAGE, prompt: tokens }, source: "estimated", started });
      }
      const error = refusing(spoken ? unservedFormat(route.effectiveModel ?? call.requestedModel, fit.format, spoken) : finalError(call.requestedModel, lastFailure, input.pinnedKeyId !== undefined ? undefined : keyWakeMs(settings.routing().switchOver, pool, route.level, fit, clock.now())));
      return ended(errorResponse(call.family, error), { route, status: error.status, usage: ZERO_USAGE, source: "upstream", started });
    } catch (error) {
      letGo?.();
      throw error;
    }
  };
}

export type Attempts = ReturnType<typeof createAttempts>;

/** One set of attempts per tenant, made on first use: each routes over its own keys, mappers and switch-over state. */
export function tenantAttempts(deps: AttemptDeps): (tenant: AttemptTenant) => Attempts {
  const made = new Map<number, Attempts>();
  return (tenant) => {
    let attempts = made.get(tenant.tenantId);
    if (!attempts) {
      attempts = createAttempts(deps, tenant);
      made.set(tenant.tenantId, attempts);
    }
    return attempts;
  };
}
