import { asClientMistake, HttpError } from "../core/errors.ts";
import { ZERO_USAGE } from "../formats/usage.ts";
import { join } from "node:path";
import type { EndingCalls } from "./ending-calls.ts";
import type { Clock } from "../core/clock.ts";
import { badRequest, notFound } from "../core/errors.ts";
import type { ServeConfig } from "../config.ts";
import type { Affinity } from "./affinity.ts";
import type { RouterMetrics } from "../metrics/router-metrics.ts";
import type { Tenant } from "../tenancy/tenants.ts";
import { checkModel } from "../http/access.ts";
import { asAnswered } from "../http/error-response.ts";
import { readBodyBytes } from "../http/body.ts";
import { metaOf } from "../http/context.ts";
import { spoolMultipart } from "../http/multipart.ts";
import { authenticate, type AuthenticateDeps, type Caller } from "../http/plugins.ts";
import type { UsageSink } from "../metering/usage-recorder.ts";
import { routeModel, type ModelRoute } from "../routing/route-model.ts";
import { tenantAttempts, type AttemptDeps } from "./attempts.ts";
import type { CallSource, ClientCall, Endpoint } from "../formats/format.ts";
import { bodyCall, multipartCall } from "../formats/read-call.ts";
import { namedFileIds } from "./named-files.ts";
import { forwardableRequestHeaders } from "./headers.ts";
import type { CallOutcome, Delivery, RelayInput } from "./call-outcome.ts";
import { createDeliver, type DeliverDeps } from "./deliver.ts";
import { startTrace, type TraceConfig } from "./trace.ts";
import { readAhead, type ReadAhead } from "./key-choice.ts";
import { logRefused, type RefusedAt } from "./refused.ts";
import { withRateLimitHeaders } from "../metering/rate-limit-headers.ts";
import { pathOnly } from "../core/redact.ts";
import type { Admission } from "../metering/admission.ts";
import { afterAnswer } from "../core/after-answer.ts";
import type { Logger } from "../core/log.ts";

/** The longest a model call's body may take to arrive: the most Bun's connection timer takes. */
export const DEFAULT_BODY_TIMEOUT_SECONDS = 255;

/** Reads the client's call from the request (JSON, multipart or Gemini form). */
export type CallReader = (request: Request) => Promise<ClientCall>;

export interface RunOptions {
  /** The key that holds the object the call continues (resource affinity). */
  pinnedKeyId?: number;
  /** Serve from this Level whatever the model (calls that carry no model). */
  level?: number;
}

/**
 * The path of every model and object call, top to bottom:
 *
 *   authenticate → read the call → AllowModels → route → admit → attempts → deliver → settle
 *
 * Each stage returns what the next one takes (a principal, a `ClientCall`, a
 * `ModelRoute`, an `Admission`, the attempt that answered, a `Delivery` with its
 * `CallOutcome`), so no stage calls back into another: the pipeline alone settles.
 */
export interface PipelineDeps extends AuthenticateDeps, AttemptDeps, DeliverDeps {
  readonly config: AuthenticateDeps["config"] & AttemptDeps["config"] & DeliverDeps["config"] & TraceConfig & Pick<ServeConfig, "dataDir" | "maxBody" | "bodyTimeoutSeconds">;
  readonly clock: Clock;
  readonly affinity: Affinity;
  readonly metrics: RouterMetrics;
  /** Streams still read for their usage: a stop waits for them before its last usage write. */
  readonly endingCalls: EndingCalls;
}

export function createPipeline(deps: PipelineDeps) {
  const attemptsFor = tenantAttempts(deps);
  const deliver = createDeliver(deps);
  const spoolDir = join(deps.config.dataDir, "tmp");
  const bodyTimeoutSeconds = deps.config.bodyTimeoutSeconds ?? DEFAULT_BODY_TIMEOUT_SECONDS;

  /**
   * A read, routed and admitted call: attempts → deliver → settle. A stop waits for it
   * before its last usage write (`EndingCalls`), like a stream read on for its usage: a
   * call still waiting for its upstream when the grace period cut its client goes on as
   * one whose client left (docs/api.md, "Client disconnect") and is settled when its
   * answer comes; the process exited before, and the call the upstream answered (and
   * billed) was never charged nor logged.
   */
  function forward(tenant: Tenant, input: RelayInput): Promise<Response> {
    const served = forwardNow(tenant, input);
    deps.endingCalls.add(served);
    const done = () => deps.endingCalls.done(served);
    served.then(done, done);
    return served;
  }

  async function forwardNow(tenant: Tenant, input: RelayInput): Promise<Response> {
    let delivery: Delivery;
    try {
      const end = await attemptsFor(tenant)(input);
      delivery = "answered" in end ? await deliver(input, end.answered, tenant.tenantId) : end.delivery;
    } catch (thrown) {
      // A fault between admission and delivery (a State that stops answering mid-call, a
      // body too deep to translate): the call ends without an answer, so its admission is
      // settled at nothing.
      const error = asClientMistake(thrown);
      // Recorded under the status its client is answered (Redis away: 503).
      const answered = asAnswered(error);
      const status = answered instanceof HttpError ? answered.status : 500;
      settleWhenEnded(tenant.meter, deps.clock, deps.log, tenant.tenantId, input, { route: input.route, status, usage: ZERO_USAGE, source: "upstream", started: input.admission.admittedAt }, deps.endingCalls);
      throw error;
    }
    settleWhenEnded(tenant.meter, deps.clock, deps.log, tenant.tenantId, input, delivery.outcome, deps.endingCalls);
    return withRateLimitHeaders(delivery.response, input.call.family, input.admission.rateLimits, input.admission.admittedAt);
  }

  /**
   * The key a call must use when it continues an object (Responses `previous_response_id`)
   * or names files in its body (each must be the caller's, held by one key); undefined,
   * without a promise, for the calls that name no object (nearly all).
   */
  const continuation = (caller: Caller, call: ClientCall, pinned: number | undefined): Promise<number | undefined> | undefined => {
    const previous = call.endpoint.continues && typeof call.json?.previous_response_id === "string" ? call.json.previous_response_id : undefined;
    const files = namedFileIds(call);
    if (previous === undefined && files.length === 0) return undefined;
    return (async () => {
      let key = pinned ?? (previous === undefined ? undefined : await boundKey(caller, previous));
      for (const id of files) {
        const bound = await deps.affinity.lookup(id, caller.tenant.tenantId);
        if (!bound || bound.accountId !== caller.principal.account.id) throw notFound(`No such File: ${id}`, "object_not_found");
        if (key === undefined) key = bound.keyId;
        else if (bound.keyId !== key) throw badRequest(`The file ${id} is held by another provider key than the rest of this call names: name objects of one key in a call`, "file_id");
      }
      return key;
    })();
  };
  const boundKey = async (caller: Caller, previous: string): Promise<number> => {
    const bound = await deps.affinity.lookup(previous, caller.tenant.tenantId);
    if (!bound || bound.accountId !== caller.principal.account.id) {
      throw notFound(`Previous response with id '${previous}' not found`, "previous_response_not_found");
    }
    return bound.keyId;
  };

  /** A call of an authenticated caller, from reading its body to its settlement. */
  async function run(request: Request, caller: Caller, read: CallReader, options: RunOptions = {}): Promise<Response> {
    const { principal, tenant } = caller;
    const meta = metaOf(request);
    // The body must arrive within its deadline: a client that sends part of it and then
    // nothing (or a byte a minute) would otherwise hold its connection for ever. Bun's
    // connection timer is that deadline (it runs from here whatever arrives; 255 s at most,
    // enough for --max-body's 64 MiB at about 2 Mbit/s) and closes the connection.
    meta?.server?.timeout(request, bodyTimeoutSeconds);
    let call: ClientCall;
    try {
      call = await read(request);
      // Reasoning models may think for minutes before the first byte: the attempts' own
      // timers guard upstream silence, so Bun's connection limit must not.
      meta?.server?.timeout(request, 0);
    } catch (thrown) {
      const error = asClientMistake(thrown);
      refused(request, pathOnly(request.url), caller, error);
      throw error;
    }
    try {
      let route: ModelRoute | undefined;
      let admission: Admission;
      let pinnedKeyId = options.pinnedKeyId;
      let ahead: ReadAhead | undefined;
      try {
        checkModel(principal, call.requestedModel);
        route = routeOf(tenant, call, options.level);
        const continued = continuation(caller, call, pinnedKeyId);
        if (continued) pinnedKeyId = await continued;
        // The key choice's reads go out now, alongside the admission (on Redis: one round trip's time for both).
        if (pinnedKeyId === undefined) ahead = readAhead(tenant, route.level);
        admission = await tenant.meter.admit({
          principal,
          endpoint: call.endpoint,
          effectiveModel: route.effectiveModel,
          json: call.json,
          fields: call.form?.fields,
          bodyBytes: call.form?.size ?? call.bytes.byteLength,
        });
      } catch (thrown) {
        // Refused before an upstream attempt: the request log keeps it, without tokens or cost.
        const error = asClientMistake(thrown);
        refused(request, pathOnly(request.url), caller, error, { call, effectiveModel: route?.effectiveModel });
        throw error;
      }
      return await forward(tenant, { call, route, admission, principal, requestId: meta?.id ?? "", clientSignal: request.signal, pinnedKeyId, trace: startTrace(request, deps.config), ahead });
    } finally {
      // The upstream has the body once its answer began; an unlinked file stays readable until closed.
      call.form?.remove();
    }
  }

  /** Logs a call refused before its first attempt (docs/api.md, "Request log"). */
  const refusedDeps = { clock: deps.clock, config: deps.config };
  const refused = (request: Request, path: string, caller: Caller, error: unknown, at?: RefusedAt) => logRefused(refusedDeps, request, path, caller, error, at);

  return {
    /** A model call from its request: authenticated here (401, 403: a 403 is logged), then run. */
    handle: async (request: Request, path: string, read: CallReader) => run(request, await authenticate(deps, request, path, refused), read),
    /** The caller of a model call, as `handle` authenticates it (a 403 is logged). */
    authenticate: (request: Request, path: string) => authenticate(deps, request, path, refused),
    run,
    forward,
    /** A JSON call of an endpoint. */
    json: (endpoint: Endpoint): CallReader => async (request) => bodyCall(endpoint, await readBodyBytes(request, deps.config.maxBody), sourceOf(request)),
    /** A multipart call of an endpoint, spooled to disk. */
    multipart: (endpoint: Endpoint): CallReader => async (request) => {
      const form = await spoolMultipart(request, deps.config.maxBody, spoolDir);
      try {
        return multipartCall(endpoint, form, sourceOf(request));
      } catch (error) {
        // A form refused for its fields (no model, no file, a field given twice) leaves no spool file behind.
        form.remove();
        throw error;
      }
    },
  };
}

export type Pipeline = ReturnType<typeof createPipeline>;

/** What a family's reader sees of a request besides its body: the URL and the headers fit to forward. */
export const sourceOf = (request: Request): CallSource => ({ url: request.url, headers: forwardableRequestHeaders(request.headers) });

/** Where the tenant's mappers send the call; a multipart form's model cannot be rewritten. */
function routeOf(tenant: Pick<Tenant, "settings">, call: ClientCall, level: number | undefined): ModelRoute {
  const routed = routeModel(tenant.settings.routing(), call.requestedModel);
  const route = level === undefined ? routed : { ...routed, level };
  if (call.form && route.effectiveModel !== call.requestedModel) {
    throw badRequest(
      `Model ${call.requestedModel} is mapped to ${route.effectiveModel}, but a multipart form's model cannot be rewritten; call ${route.effectiveModel} directly`,
      "model",
    );
  }
  return route;
}

/**
 * Settles the call once its outcome is known (an answer read whole at once, a stream
 * when it ends), right after the answer is handed to the client: the client does not
 * wait for the bookkeeping (with the access-log line: c=1 p50 about 20 µs less). Its
 * duration ends when the outcome is known.
 */
function settleWhenEnded(sink: UsageSink, clock: Clock, log: Logger, tenantId: number, input: RelayInput, outcome: CallOutcome | Promise<CallOutcome>, ending: EndingCalls): void {
  const settleNext = (ended: CallOutcome) => {
    const endedAt = clock.now();
    afterAnswer(() => {
      try {
        settle(sink, endedAt, tenantId, input, ended);
      } catch (error) {
        log.error("a call could not be settled", { req: input.requestId, error: (error as Error).message });
      }
    });
  };
  if (outcome instanceof Promise) {
    // A stop waits for it before its last usage write (ending-calls.ts).
    ending.add(outcome);
    void outcome.then((ended) => {
      ending.done(outcome);
      settleNext(ended);
    });
  } else settleNext(outcome);
}

/** Metering charges the call (releasing its admission) and its usage and request-log rows are recorded. */
function settle(sink: UsageSink, endedAt: number, tenantId: number, input: RelayInput, { route, status, usage, source, started, extra, unsent }: CallOutcome): void {
  sink.record({
    requestId: input.requestId,
    accountId: input.principal.account.id,
    endpoint: input.call.endpoint.path,
    requestedModel: input.call.requestedModel,
    effectiveModel: route.effectiveModel,
    level: route.level,
    keyId: route.keyId,
    status,
    stream: input.call.stream,
    usage,
    source,
    latencyMs: endedAt - started,
    at: started,
    extra,
    admission: input.admission,
    notUsage: input.call.endpoint.counting || unsent,
    logged: { tenantId, family: input.call.family, trace: input.trace },
  });
}
