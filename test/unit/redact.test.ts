import { describe, expect, test } from "bun:test";
import { createLogger } from "../../src/core/log.ts";
import { pathOnly, redact, redactSecret } from "../../src/core/redact.ts";

test("redaction removes key shapes, bearer values, URL keys and private keys", () => {
  expect(redact("auth Bearer abcdefghijklmnop")).toBe("auth Bearer [redacted]");
  expect(redact("key sk-rt-AAAAAAAAAAAAAAAAAAAAAA used")).toBe("key [redacted-key] used");
  expect(redact("GET /v1beta/models/x?key=AIzaSyabc&alt=sse")).toBe("GET /v1beta/models/x?key=[redacted]&alt=sse");
  expect(redact("-----BEGIN PRIVATE KEY-----\nMIIabc\n-----END PRIVATE KEY-----")).toBe("[redacted-private-key]");
});

test("log lines pass through redaction and respect the level", () => {
  const lines: string[] = [];
  const log = createLogger("info", (line) => lines.push(line));
  log.debug("hidden");
  log.info("upstream said", { detail: "invalid key sk-proj-abcdefghijklmnopqrstuv" });
  expect(lines).toHaveLength(1);
  expect(lines[0]).toContain("level=info");
  expect(lines[0]).not.toContain("abcdefghijklmnopqrstuv");
});

test("request paths are logged without their query string", () => {
  expect(pathOnly("http://h:1/v1beta/models/m:generateContent?key=secret")).toBe("/v1beta/models/m:generateContent");
  expect(pathOnly("http://h:1")).toBe("/");
});

describe("redactSecret: a known secret in the spellings an upstream may echo", () => {
  const secret = "sk-ant-api03-Zx9/Q+r_7~abc.def";
  const spellings = (s: string) => [
    s,
    JSON.stringify(s).slice(1, -1),
    encodeURIComponent(s),
    Buffer.from(s).toString("base64"),
    Buffer.from(s).toString("base64url"),
    Buffer.from(`Bearer ${s}`).toString("base64"),
    Buffer.from(`${s}:`).toString("base64"),
    // Encoded inside a longer value, at each of the three byte offsets.
    Buffer.from(`user=${s}&x=1`).toString("base64"),
    Buffer.from(`u=${s}&x=1`).toString("base64"),
    Buffer.from(`id=${s}&x=1`).toString("base64"),
    // URL-encoded with lower-case hex.
    encodeURIComponent(s).replace(/%[0-9A-F]{2}/g, (hex) => hex.toLowerCase()),
  ];
  test.each(spellings(secret))("%p is gone", (spelled) => {
    const out = redactSecret(`{"error":{"message":"bad key ${spelled} given"}}`, secret);
    expect(out).toContain("[redacted]");
    for (const form of [secret, encodeURIComponent(secret), Buffer.from(secret).toString("base64").slice(0, 16)]) expect(out).not.toContain(form);
  });

  test("as other JSON writers spell it: PHP's \\/, Go's \\u0026 for <>&, .NET's \\u002B for those and ' + `", () => {
    const marked = "corp&gw<Q+9x7/Yz!Kq2m'Lw8";
    const forms = [
      marked.replaceAll("/", "\\/"),
      marked.replace(/[<>&]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`),
      marked.replace(/[<>&'+`]/g, (c) => `\\u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`),
    ];
    for (const form of forms) {
      expect(form).not.toContain(marked);
      const out = redactSecret(`{"error":{"message":"bad key ${form} given"}}`, marked);
      expect(out).toBe('{"error":{"message":"bad key [redacted] given"}}');
    }
  });

  test("text without the secret is unchanged", () => {
    expect(redactSecret('{"error":"model not found"}', secret)).toBe('{"error":"model not found"}');
  });
});

test("a log line takes a wrapped error's innermost message: drizzle's wrapper carries the query's parameters (a sealed secret among them)", async () => {
  const { causeMessage } = await import("../../src/core/errors.ts");
  const driver = Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), { errno: "22021" });
  const wrapped = new Error("Failed query: insert into provider_keys (name, secret_sealed) values ($1, $2)\nparams: bad,v1.sealed-secret-bytes", { cause: driver });
  expect(causeMessage(wrapped)).toBe('invalid byte sequence for encoding "UTF8": 0x00');
  expect(causeMessage(driver)).toBe(driver.message);
  expect(causeMessage("plain")).toBe("plain");
});
