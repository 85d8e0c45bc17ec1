/**
 * A database URL as it may be shown: without its password, which must never reach a
 * log line or an error message.
 */
export function shownUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(an unreadable database URL)";
  }
}

/** A driver message with the URL's password taken out, should the driver ever echo it. */
export function withoutPassword(message: string, url: string): string {
  let password = "";
  try {
    password = decodeURIComponent(new URL(url).password);
  } catch {
    return message;
  }
  return password ? message.split(password).join("***") : message;
}

/** What went wrong talking to the server at `url`, fit for a log line: the driver's code kept, the password never. */
export function describeFailure(error: unknown, url: string): string {
  const { message, code } = error as { message?: string; code?: string };
  const reason = withoutPassword(String(message ?? error), url);
  // A certificate the runtime does not trust: say how to trust a private CA.
  const hint = /CERT|UNABLE_TO_VERIFY|SELF_SIGNED/.test(`${code ?? ""} ${reason}`)
    ? "; if the server's certificate comes from a private CA, give that CA with --upstream-ca-file (its trust covers the database and Redis too)"
    : "";
  return `PostgreSQL at ${shownUrl(url)}: ${reason}${code && !reason.includes(code) ? ` (${code})` : ""}${hint}`;
}
