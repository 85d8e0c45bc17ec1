/**
 * What a provider's error body says beyond its status. Statuses alone mislead: providers
 * answer a dead or exhausted account with statuses that otherwise mean the client's
 * mistake (400) or a passing rate limit (429), and Gemini says how long to wait in its
 * body rather than in a Retry-After header. Pure: the attempts read the body, this judges it.
 */

interface ErrorBody {
  type?: unknown;
  code?: unknown;
  status?: unknown;
  message?: unknown;
  details?: unknown;
}

/** The `error` member of an OpenAI, Anthropic or Gemini error body, when the text is one. */
function errorOf(text: string): ErrorBody | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  // Gemini's JSON streams wrap their error in an array.
  if (Array.isArray(parsed)) parsed = parsed[0];
  const error = (parsed as { error?: unknown } | null)?.error;
  return error && typeof error === "object" ? (error as ErrorBody) : undefined;
}

const detailsOf = (error: ErrorBody): Array<Record<string, unknown>> =>
  Array.isArray(error.details) ? error.details.filter((d): d is Record<string, unknown> => !!d && typeof d === "object") : [];

const messageOf = (error: ErrorBody) => (typeof error.message === "string" ? error.message : "");

/**
 * Whether an error answer says the key itself cannot serve any call (revoked, out of
 * quota or credit, billing refused), so that it is to be put aside like a 401 and the call
 * tried on another key, and not relayed to the client as its own mistake nor waited out:
 * - 402 Payment Required, whatever the provider (Anthropic's `billing_error`, an
 *   OpenAI-compatible gateway out of credit);
 * - OpenAI's 429 `insufficient_quota`: the account's quota is spent, not a rate limit;
 * - Anthropic's 400 "Your credit balance is too low…";
 * - Gemini's 400 `API_KEY_INVALID` (a key not valid, expired or not found), and its 400
 *   `FAILED_PRECONDITION` for a key whose place or plan the API refuses ("User location is
 *   not supported", free tier not available: enable billing).
 */
export function isDeadKeyAnswer(status: number, text: string): boolean {
  if (status === 402) return true;
  if (status !== 400 && status !== 429) return false;
  const error = errorOf(text);
  if (!error) return false;
  if (status === 429) return error.code === "insufficient_quota" || error.type === "insufficient_quota";
  // Messages are matched from their start: a client's words an upstream echoes back
  // inside its message must not put a key to sleep.
  if (error.type === "invalid_request_error" && /^Your credit balance is too low/i.test(messageOf(error))) return true;
  if (detailsOf(error).some((d) => d.reason === "API_KEY_INVALID")) return true;
  if (error.status === "INVALID_ARGUMENT" && /^API key (not valid|expired|not found)/i.test(messageOf(error))) return true;
  return error.status === "FAILED_PRECONDITION" && /^(User location is not supported|Gemini API free tier is not available)/i.test(messageOf(error));
}

/**
 * Whether an error answer says this key cannot serve the call's model though another key
 * may: Azure's 404 `DeploymentNotFound` (the key's resource has no deployment of the name
 * the router sent: a deployment made in another resource, or missing from the key's
 * `deployments` map), and Vertex's 404 `NOT_FOUND` "Publisher Model … was not found or your
 * project does not have access to it" (a model not offered in the key's location or not
 * enabled for its project). Not the client's mistake as such, nor the key's death: it
 * serves its other models.
 */
export function isModelMissingOnKey(status: number, text: string): boolean {
  if (status !== 404) return false;
  const error = errorOf(text);
  if (!error) return false;
  if (error.code === "DeploymentNotFound") return true;
  return error.status === "NOT_FOUND" && /^Publisher Model .* was not found or your project does not have access to it/.test(messageOf(error));
}

/** Gemini's `google.rpc.RetryInfo` `retryDelay` ("17s", "0.5s") in milliseconds, when the body carries one. */
export function bodyRetryAfterMs(text: string): number | undefined {
  const error = errorOf(text);
  if (!error) return undefined;
  for (const detail of detailsOf(error)) {
    const delay = detail.retryDelay;
    if (typeof delay !== "string") continue;
    const match = /^(\d+(?:\.\d+)?)s$/.exec(delay.trim());
    if (match) return Math.round(Number(match[1]) * 1000);
  }
  return undefined;
}
