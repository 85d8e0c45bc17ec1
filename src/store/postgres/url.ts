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
