import type { ComponentChildren } from "preact";
import { ApiError } from "../lib/api.ts";

/** An error in words: 403 says what is not allowed, 429 when to retry. */
export function describeError(error: unknown): string {
  if (!(error instanceof ApiError)) return error instanceof Error ? error.message : String(error);
  if (error.status === 403) return `Not allowed: ${error.message}`;
  if (error.status === 429) {
    const when = error.retryAfter ? ` Retry after ${error.retryAfter} s (${new Date(Date.now() + error.retryAfter * 1000).toLocaleTimeString()}).` : "";
    return `Too many requests: ${error.message}.${when}`;
  }
  if (error.status === 0) return error.message;
  if (error.status >= 500) return `The router could not do it: ${error.message}`;
  return error.message;
}

/**
 * The server's refusal of one field, for the form to show next to that field: its
 * message when the error names `param` (the server's `param`), else undefined.
 */
export function serverFieldError(error: unknown, param: string): string | undefined {
  return error instanceof ApiError && error.param === param ? error.message : undefined;
}

/**
 * A failure in words, with no status code or field name in brackets. Errors a form
 * shows next to their field (`attached`: the params it has fields for) are not
 * repeated here.
 */
export function ErrorNote({ error, attached = [] }: { error: unknown; attached?: readonly string[] }) {
  if (!error) return null;
  if (error instanceof ApiError && error.param && attached.includes(error.param)) return null;
  return (
    <div class="note error" role="alert">
      {describeError(error)}
    </div>
  );
}

export function Success({ children }: { children: ComponentChildren }) {
  return (
    <div class="note success" role="status">
      {children}
    </div>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

export function Loading({ what = "Loading" }: { what?: string }) {
  return (
    <p class="loading" role="status" aria-live="polite">
      {what}…
    </p>
  );
}
