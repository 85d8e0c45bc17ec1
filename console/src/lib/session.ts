/**
 * The API key lives only in sessionStorage: it survives reloads and moves between the
 * three console pages of one tab, and is gone when the tab is closed. It is never put
 * in a URL, a cookie, localStorage or a log line; api.ts sends it as the bearer header.
 */
const STORAGE_NAME = "router.console.key";

export function storedKey(): string | null {
  try {
    return sessionStorage.getItem(STORAGE_NAME);
  } catch {
    return null;
  }
}

export function storeKey(key: string): void {
  sessionStorage.setItem(STORAGE_NAME, key);
}

export function clearKey(): void {
  sessionStorage.removeItem(STORAGE_NAME);
}

/** The key shown masked: its 10-character prefix (sk-rt- and four characters) and an ellipsis. */
export function maskedKey(key: string | null): string {
  if (!key) return "sk-rt-…";
  return `${key.slice(0, 10)}…`;
}
