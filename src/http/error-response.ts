import { asClientMistake, badRequest, causeMessage, HttpError } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import type { RouterMetrics } from "../metrics/router-metrics.ts";
import { errorResponse } from "./envelopes.ts";
import { familyOfRequest } from "../formats/registry.ts";
import { metaOf } from "./context.ts";
import { RedisUnavailable } from "../state/redis/connection.ts";
import type { Store } from "../store/store.ts";

/** Where a thrown error is accounted for: refusals in the metrics, anything unexpected in the log. */
export interface ErrorResponseDeps {
  metrics: Pick<RouterMetrics, "refusals">;
  log: Logger;
  store: Pick<Store, "refusedRow" | "unavailable" | "busy">;
}

/**
 * A thrown error as its client is answered, where no store is needed to judge it: an
 * HttpError (a client's mistake included) as it is; the shared State away (Redis) as 503
 * redis_unavailable, a call refused rather than admitted without its limits and credit.
 * The pipeline records a failed call under the same status.
 */
export function asAnswered(thrown: unknown): unknown {
  const error = asClientMistake(thrown);
  if (error instanceof RedisUnavailable) {
    return new HttpError("unavailable", "Redis, where this router keeps limits and credit, is unavailable; try again shortly", { code: "redis_unavailable", headers: { "retry-after": "1" } });
  }
  return error;
}

/**
 * What a thrown error becomes for the client: an HttpError in its family's envelope
 * (refusals counted in the metrics), anything else a logged 500 that names the
 * request id, never the error itself.
 */
export function thrownResponse(deps: ErrorResponseDeps, thrown: unknown, request: Request, path: string): Response {
  const family = familyOfRequest(request, path);
  const mistake = asClientMistake(thrown);
  // The detail of Redis being away (never a URL) goes to the log, not the client.
  if (mistake instanceof RedisUnavailable) deps.log.warn("Redis unavailable", { req: metaOf(request)?.id, path, error: mistake.message });
  const error = asAnswered(mistake);
  if (error instanceof HttpError) {
    if (error.status === 403 || error.status === 429) deps.metrics.refusals.inc({ code: error.code ?? error.kind });
    return errorResponse(family, error);
  }
  if (deps.store.unavailable(error)) {
    // PostgreSQL is away (a refused or dropped connection): a retry in a moment may succeed.
    deps.log.warn("the database is unavailable", { req: metaOf(request)?.id, path, error: causeMessage(error) });
    return errorResponse(family, new HttpError("unavailable", "PostgreSQL, where this router keeps accounts and usage, is unavailable; try again shortly", { code: "database_unavailable", headers: { "retry-after": "1" } }));
  }
  if (deps.store.busy(error)) {
    // Another process (a sqlite3 shell, a tool) holds the embedded file's write lock.
    deps.log.warn("the database file is locked by another process", { req: metaOf(request)?.id, path, error: causeMessage(error) });
    return errorResponse(family, new HttpError("unavailable", "The database file is locked by another process; try again shortly", { code: "database_busy", headers: { "retry-after": "1" } }));
  }
  if (deps.store.refusedRow(error)) {
    // A value the client sent that the database cannot hold (PostgreSQL: a NUL character in a name or a mapping).
    deps.log.warn("a request's value the database cannot store", { req: metaOf(request)?.id, path, error: causeMessage(error) });
    return errorResponse(family, badRequest("The request holds a value the database cannot store (a NUL character, for example); remove it and send the request again"));
  }
  deps.log.error("unhandled error", { req: metaOf(request)?.id, path, error: causeMessage(error) });
  return errorResponse(family, new HttpError("internal", "Internal error; see the server log for this request id"));
}
