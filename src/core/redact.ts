/**
 * Last line of defence against secrets in logs and error messages. Code should
 * never hand a secret to a logger in the first place; this catches the shapes a
 * secret takes when it slips through (a bearer value, a key-like token, a key in a
 * query string).
 */
const PATTERNS: Array<[RegExp, string]> = [
  // Query parameters that carry credentials.
  [/([?&](?:key|api[-_]?key|token|access_token|secret)=)[^&\s#]+/gi, "$1[redacted]"],
  // Authorization-style values.
  [/(bearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi, "$1[redacted]"],
  // Our own API keys and common provider key shapes.
  [/\b(?:sk|rk|pk)-[A-Za-z0-9_-]{12,}/g, "[redacted-key]"],
  [/\bAIza[0-9A-Za-z_-]{20,}/g, "[redacted-key]"],
  // PEM private keys (service-account files).
  [/-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g, "[redacted-private-key]"],
];

/**
 * Something every pattern above needs, tested in one pass first: most texts (log lines
 * of ordinary requests, upstream error bodies) hold none, and five replacements per
 * line cost more than the request's own log work.
 */
const MAYBE_SECRET = /[?&](?:key|api|token|access_token|secret)|bearer|[srp]k-|AIza|-----BEGIN/i;

export function redact(text: string): string {
  if (!MAYBE_SECRET.test(text)) return text;
  let out = text;
  for (const [pattern, replacement] of PATTERNS) out = out.replace(pattern, replacement);
  return out;
}

/**
 * How other JSON writers than JSON.stringify spell a string: PHP's `json_encode` writes
 * `/` as `\/`; Go's encoder writes `<`, `>` and `&` as `\u003c`…; .NET's default one
 * writes those, `'`, `+` and `` ` `` as `\u002B`… (upper-case hex).
 */
const JSON_WRITERS: Array<(json: string) => string> = [
  (json) => json.replaceAll("/", "\\/"),
  (json) => json.replace(/[<>&]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`),
  (json) => json.replace(/[<>&'+`]/g, (c) => `\\u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`),
];

/**
 * The spellings of one known secret an upstream may echo back: as sent, JSON-escaped
 * (as JSON.stringify and the other common writers spell it: JSON_WRITERS), URL-encoded
 * (hex in either case), and base64 (standard and URL-safe, with and without padding,
 * also of `Bearer <secret>` and of `<secret>:` as in Basic credentials). Only the
 * aligned base64 forms are findable: a secret encoded in the middle of a longer value
 * shifts by the bytes before it, so those three offsets are covered too.
 */
export function secretSpellings(secret: string): string[] {
  if (secret.length < 8) return [secret];
  const json = JSON.stringify(secret).slice(1, -1);
  const url = encodeURIComponent(secret);
  const spellings = new Set<string>([secret, json, url, url.replace(/%[0-9A-F]{2}/g, (hex) => hex.toLowerCase())]);
  for (const write of JSON_WRITERS) spellings.add(write(json));
  for (const wrapped of [secret, `Bearer ${secret}`, `${secret}:`]) {
    for (const offset of [0, 1, 2]) {
      const bytes = Buffer.from(" ".repeat(offset) + wrapped);
      // Drop the characters that mix in the prefix, and the last group that mixes with what follows.
      const full = bytes.toString("base64");
      const start = offset === 0 ? 0 : 4;
      const core = full.slice(start).replace(/=+$/, "");
      const stable = core.slice(0, core.length - (core.length % 4 === 0 ? 0 : core.length % 4));
      if (stable.length >= 12) {
        spellings.add(stable);
        spellings.add(stable.replace(/\+/g, "-").replace(/\//g, "_"));
      }
    }
  }
  return [...spellings].sort((a, b) => b.length - a.length);
}

/** `text` without any spelling of `secret`, or of each of several (an upstream error body relayed to a client). */
export function redactSecret(text: string, secret: string | readonly string[]): string {
  let out = text;
  for (const one of typeof secret === "string" ? [secret] : secret) {
    for (const spelling of secretSpellings(one)) if (out.includes(spelling)) out = out.split(spelling).join("[redacted]");
  }
  return out;
}

/** The path of a URL with any query string dropped: what request logs show. */
export function pathOnly(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const path = start < 0 ? "/" : url.slice(start);
  const query = path.indexOf("?");
  return query < 0 ? path : path.slice(0, query);
}
