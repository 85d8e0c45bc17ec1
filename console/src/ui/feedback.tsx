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
  return `${error.message}${error.param ? ` (field ${error.param})` : ""}`;
}

export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const status = error instanceof ApiError && error.status ? ` ${error.status}` : "";
  return (
    <div class="note error" role="alert">
      <strong>Error{status}:</strong> {describeError(error)}
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
