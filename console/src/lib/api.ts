import { clearKey, storedKey } from "./session.ts";
import { isWrite, newIdempotencyKey, sendWithResends } from "../../../src/wire/resend.ts";

/** An error answer of the router (its OpenAI-style envelope), or a network failure (status 0). */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code?: string,
    readonly param?: string,
    /** Seconds, from a 429's Retry-After header. */
    readonly retryAfter?: number,
  ) {
    super(message);
  }
}

export interface ApiResult<T> {
  data: T;
  headers: Headers;
}

/** Fired when the router refuses the stored key (401): the page goes back to the login form. */
export const LOGGED_OUT_EVENT = "console:logged-out";

interface Options {
  /** JSON body. */
  body?: unknown;
  /** false: send no key (public endpoints). */
  auth?: boolean;
  /** Try this key instead of the stored one (login, before it is stored). */
  key?: string;
}

/**
 * Calls the router on this origin. The key goes only into the Authorization header;
 * query strings carry filters and dates, never a secret. A write carries an
 * Idempotency-Key and is sent again under it when its answer is lost (a dropped
 * connection), so a credit grant whose answer never arrived is not granted twice.
 */
export async function call<T>(method: string, path: string, options: Options = {}): Promise<ApiResult<T>> {
  const headers: Record<string, string> = { accept: "application/json" };
  const key = options.key ?? (options.auth === false ? null : storedKey());
  if (key) headers.authorization = `Bearer ${key}`;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  const write = isWrite(method);
  if (write) headers["idempotency-key"] = newIdempotencyKey();
  const sent = await sendWithResends(write, () =>
    fetch(path, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      credentials: "omit",
      cache: "no-store",
    }),
  );
  if ("lost" in sent) throw new ApiError("The router could not be reached. Check the connection and try again.", 0);
  const { response, text } = sent;
  let data: unknown = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = text;
  }
  if (!response.ok) throw toError(response, data, options.key === undefined && key !== null);
  return { data: data as T, headers: response.headers };
}

function toError(response: Response, data: unknown, storedKeyUsed: boolean): ApiError {
  const envelope = (data as { error?: { message?: string; code?: string; param?: string } } | null)?.error;
  const message = envelope?.message ?? `The router answered ${response.status} ${response.statusText}`;
  const retry = Number(response.headers.get("retry-after"));
  const error = new ApiError(message, response.status, envelope?.code, envelope?.param, Number.isFinite(retry) && retry > 0 ? retry : undefined);
  if (response.status === 401 && storedKeyUsed) {
    clearKey();
    window.dispatchEvent(new CustomEvent(LOGGED_OUT_EVENT, { detail: message }));
  }
  return error;
}

export const api = {
  get: <T>(path: string, options?: Options) => call<T>("GET", path, options),
  post: <T>(path: string, body?: unknown) => call<T>("POST", path, { body }),
  put: <T>(path: string, body?: unknown) => call<T>("PUT", path, { body }),
  del: <T>(path: string, body?: unknown) => call<T>("DELETE", path, { body }),
};

/** A query string from the defined, non-empty values. */
export function query(params: Record<string, string | number | undefined | null>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") search.set(name, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

/** X-Total-Count, X-Total-Pages, X-Page of a list answer. */
export function pagination(headers: Headers): { total: number; pages: number; page: number } {
  return {
    total: Number(headers.get("x-total-count") ?? 0),
    pages: Number(headers.get("x-total-pages") ?? 0),
    page: Number(headers.get("x-page") ?? 1),
  };
}
