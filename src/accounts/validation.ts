/** Field rules shared by the CLI and the account endpoints (spec 2.2, 8). */

import { BIDI_CONTROL } from "../core/bidi.ts";

const EMAIL = /^[^\s@<>(),;:"\[\]\\]+@[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$/;

/** C0 and C1 controls, DEL and the Unicode line separators: never part of an address, and they forge header and log lines. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

/** Invisible characters an identifier cannot hold ("ann" and "ann\u200B" would differ unseen); ZWNJ and ZWJ stay, Persian and emoji need them. */
const INVISIBLE = /[\u200b\u2060-\u2064\ufeff]/;

/**
 * A deliverable-looking address of at most 254 characters; `owner@localhost` is allowed (the
 * first-start default). A local part may be Unicode (SMTPUTF8), but not bidirectional or
 * invisible characters: they reorder or hide what is shown, so one address could pass for another.
 */
export function isValidEmail(email: string): boolean {
  return email.length <= 254 && !CONTROL.test(email) && !BIDI_CONTROL.test(email) && !INVISIBLE.test(email) && EMAIL.test(email) && !email.includes("..");
}

export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** A letter of any script: the spec asks for "at least one letter". */
const LETTER = /\p{L}/u;
/**
 * What a name may not hold: controls (they forge log and header lines), `@` (an
 * identifier with one is read as an email), `/` and `\` (an identifier is a path
 * segment), and space at either end (a name is an identifier: "ann" and "ann " would
 * differ unseen).
 */
const NAME_REFUSES = /[\u0000-\u001f\u007f-\u009f\u2028\u2029@/\\]|^\s|\s$/;

/**
 * Spec 2.2 and 8: 4 to 63 characters (Unicode characters, not UTF-16 units) with at
 * least one letter; see `NAME_REFUSES` for the few characters an identifier cannot hold.
 */
export function isValidAccountName(name: string): boolean {
  const length = [...name].length;
  return length >= 4 && length <= 63 && LETTER.test(name) && !NAME_REFUSES.test(name) && !BIDI_CONTROL.test(name) && !INVISIBLE.test(name);
}

/** An Alias is free text for people, shown wherever the account is: one line, in the order it was typed. */
export const isValidAlias = (alias: string) => !CONTROL.test(alias) && !BIDI_CONTROL.test(alias);

export const ALIAS_RULE = "Alias must be one line without control characters or bidirectional controls (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C)";

/** What a refused name is told (the API and the console say the same). */
export const ACCOUNT_NAME_RULE =
  "Name must be 4 to 63 characters with at least one letter, without @, /, \\, control characters, bidirectional controls, zero-width spaces or spaces at either end";

/** A valid, probably unique name derived from an email's local part. */
export function nameFromEmail(email: string, suffix: string): string {
  const local = (email.split("@")[0] ?? "").replace(/[^A-Za-z0-9._-]/g, "").slice(0, 40);
  const base = /[A-Za-z]/.test(local) ? local : `user${local}`;
  return `${base}-${suffix}`.slice(0, 63);
}
