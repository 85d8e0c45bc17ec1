import { HttpError } from "../core/errors.ts";
import type { Deps } from "../deps.ts";
import { errorResponse } from "./envelopes.ts";
import { familyOfRequest } from "../formats/registry.ts";
import { metaOf } from "./context.ts";

/**
 * What a thrown error becomes for the client: an HttpError in its family's envelope
 * (refusals counted in the metrics), anything else a logged 500 that names the
 * request id, never the error itself.
 */
export function thrownResponse(deps: Pick<Deps, "metrics" | "log">, error: unknown, request: Request, path: string): Response {
  const family = familyOfRequest(request.headers, path);
  if (error instanceof HttpError) {
    if (error.status === 403 || error.status === 429) deps.metrics.refusals.inc({ code: error.code ?? error.kind });
    return errorResponse(family, error);
  }
  deps.log.error("unhandled error", {
    req: metaOf(request)?.id,
    path,
    error: error instanceof Error ? error.message : String(error),
  });
  return errorResponse(family, new HttpError("internal", "Internal error; see the server log for this request id"));
}
