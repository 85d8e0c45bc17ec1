/** Field rules shared by the CLI and the account endpoints (spec 2.2, 8). */

const EMAIL = /^[^\s@<>(),;:"\[\]\\]+@[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$/;

/** C0 and C1 controls, DEL and the Unicode line separators: never part of an address, and they forge header and log lines. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

/** A deliverable-looking address of at most 254 characters; `owner@localhost` is allowed (the first-start default). */
export function isValidEmail(email: string): boolean {
  return email.length <= 254 && !CONTROL.test(email) && EMAIL.test(email) && !email.includes("..");
}

export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

const NAME = /^[A-Za-z0-9._-]{4,63}$/;

/** 4 to 63 characters of letters, digits, `.`, `_`, `-`, with at least one letter. */
export function isValidAccountName(name: string): boolean {
  return NAME.test(name) && /[A-Za-z]/.test(name);
}

/** A valid, probably unique name derived from an email's local part. */
export function nameFromEmail(email: string, suffix: string): string {
  const local = (email.split("@")[0] ?? "").replace(/[^A-Za-z0-9._-]/g, "").slice(0, 40);
  const base = /[A-Za-z]/.test(local) ? local : `user${local}`;
  return `${base}-${suffix}`.slice(0, 63);
}
