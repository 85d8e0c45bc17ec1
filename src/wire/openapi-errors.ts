/**
 * The error answers each management operation declares in /openapi.json, derived from
 * what the router checks on it, so that generated clients know the real statuses
 * (docs/api.md, "GET /openapi.json"). Every one is the management error envelope.
 */

/** What about an operation decides its errors. */
export interface ErrorTraits {
  method: string;
  path: string;
  /** Whether a key is checked (every operation but the open ones). */
  keyed: boolean;
  /** Whether it takes a JSON body (read up to --max-body). */
  body: boolean;
  /** Whether it takes query parameters, or a path parameter that must be a number. */
  checkedInput: boolean;
  /** Whether a path parameter names a record that may not exist. */
  pathId: boolean;
  /** Whether it is a write taking an Idempotency-Key. */
  idempotent: boolean;
  /** Statuses the operation answers beyond those derived (a named account not found, a rate limit). */
  extra?: readonly number[];
}

const WHY: Record<number, string> = {
  400: "The body, a query or path parameter or the Idempotency-Key is invalid (`param` names it)",
  401: "No API key, or one the router does not know",
  403: "Not allowed: the key's AllowIPs, the RESOURCES allowlist or the account's Resources, or the role the operation needs (owner, manager)",
  404: "The record named does not exist or is not the caller's to see",
  409: "A conflict with the stored state, or the same Idempotency-Key still running",
  413: "The body is larger than --max-body",
  422: "The Idempotency-Key was used before with another request",
  429: "Too many such requests; Retry-After says when to try again",
  502: "The mail server refused or could not be reached (its answer in the message)",
  503: "PostgreSQL or Redis is unavailable; Retry-After says when to try again",
};

/** The error statuses an operation declares, ascending. */
export function errorStatuses(op: ErrorTraits): number[] {
  const statuses = new Set<number>(op.extra ?? []);
  // A malformed Idempotency-Key is a 400 naming the header, even on a write without body or query.
  if (op.body || op.checkedInput || op.idempotent) statuses.add(400);
  // Every key may be bound to addresses (AllowIPs), and every path to Resources: every keyed operation can be refused.
  if (op.keyed) [401, 403, 503].forEach((s) => statuses.add(s));
  if (op.pathId) statuses.add(404);
  if (op.body) statuses.add(413);
  if (op.idempotent) [409, 422].forEach((s) => statuses.add(s));
  return [...statuses].sort((a, b) => a - b);
}

/** Refusals that say how long to wait (a rate limit, a dependency away): they carry Retry-After. */
const WAIT = new Set([429, 503]);

/** The `responses` entries of those statuses, each the error envelope with its X-Request-Id (and Retry-After where sent). */
export function errorResponses(op: ErrorTraits, envelope: Record<string, unknown>, headers: (names: readonly string[]) => Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    errorStatuses(op).map((status) => [
      status,
      { description: WHY[status] ?? "An error", headers: headers(WAIT.has(status) ? ["X-Request-Id", "Retry-After"] : ["X-Request-Id"]), content: { "application/json": { schema: envelope } } },
    ]),
  );
}
