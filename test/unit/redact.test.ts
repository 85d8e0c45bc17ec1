import { expect, test } from "bun:test";
import { createLogger } from "../../src/core/log.ts";
import { pathOnly, redact } from "../../src/core/redact.ts";

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
