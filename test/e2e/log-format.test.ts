import { expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { serveOnce } from "../helpers/serve-once.ts";
import { tempDir } from "../helpers/router.ts";

/**
 * `--log-format json`: what a log collector (Loki, Datadog, CloudWatch, Elastic) reads
 * from stderr is one JSON object a line, from the first start-up warning to the last
 * request line, with the request's fields typed.
 */
test("router serve --log-format json writes only JSON lines on stderr: start-up warnings and request lines alike", async () => {
  const data = tempDir("router-log-json-");
  try {
    const served = await serveOnce(["--data", data, "--log-format", "json", "--metrics-token", "a-metrics-token-given-as-a-flag"], async (url) => {
      const refused = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { authorization: "Bearer sk-not-a-key-here-000000000", "content-type": "application/json" }, body: "{}" });
      return refused.headers.get("x-request-id");
    });
    expect(served.started).toBe(true);
    const lines = served.stderr.trim().split("\n");
    const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    // The flag's warning (a secret in the process list) is a JSON line too, and holds no secret.
    expect(entries.find((e) => e.level === "warn" && String(e.msg).includes("--metrics-token"))).toBeDefined();
    expect(served.stderr).not.toContain("a-metrics-token-given-as-a-flag");
    const request = entries.find((e) => e.msg === "request" && e.req === served.probed);
    expect(request).toMatchObject({ level: "info", method: "POST", path: "/v1/chat/completions", status: 401 });
    expect(typeof request!.ms).toBe("number");
  } finally {
    rmSync(data, { recursive: true, force: true });
  }
}, 30_000);
