import { expect, test } from "bun:test";
import { createLogger, type LogFormat } from "../../src/core/log.ts";

/** The lines a logger of this format writes for `write`. */
function linesOf(format: LogFormat, write: (log: ReturnType<typeof createLogger>) => void): string[] {
  const lines: string[] = [];
  write(createLogger("debug", (line) => lines.push(line), format));
  return lines;
}

test("logfmt: time, level and message first, then the fields; values with spaces quoted", () => {
  const [line] = linesOf("logfmt", (log) => log.warn("upstream attempt failed", { req: "req_1", key: 3, status: 502, error: "bad gateway" }));
  expect(line).toMatch(/^time=\d{4}-\d\d-\d\dT[\d:.]+Z level=warn msg="upstream attempt failed" req=req_1 key=3 status=502 error="bad gateway"$/);
});

test("json: one object a line with the same members, typed, for log collectors", () => {
  const [line] = linesOf("json", (log) => log.info("request", { method: "POST", path: "/v1/chat/completions", status: 200, ms: 1.25, account: undefined, cached: false }));
  const entry = JSON.parse(line!);
  expect(entry).toEqual({ time: expect.stringMatching(/Z$/), level: "info", msg: "request", method: "POST", path: "/v1/chat/completions", status: 200, ms: 1.25, cached: false });
  expect(Object.keys(entry).slice(0, 3)).toEqual(["time", "level", "msg"]);
});

test("a field named like the line's own members never replaces them (a Level number is not the log level)", () => {
  for (const format of ["logfmt", "json"] as const) {
    const [line] = linesOf(format, (log) => log.warn("x", { level: 2, msg: "other", time: "then" }));
    if (format === "json") expect(JSON.parse(line!)).toMatchObject({ level: "warn", msg: "x", level_: 2, msg_: "other", time_: "then" });
    else {
      expect(line!.match(/(?:^| )level=/g)).toHaveLength(1);
      expect(line).toContain(" level_=2 msg_=other time_=then");
    }
  }
});

test("both formats redact a key-shaped value, whatever field carries it", () => {
  for (const format of ["logfmt", "json"] as const) {
    const [line] = linesOf(format, (log) => log.error("failed", { error: "upstream said: invalid key sk-proj-abcdefghijklmnop1234" }));
    expect(line).not.toContain("abcdefghijklmnop1234");
    expect(line).toContain("[redacted-key]");
  }
});

test("lines under the level are not written", () => {
  const lines: string[] = [];
  const log = createLogger("warn", (line) => lines.push(line), "json");
  log.info("quiet");
  log.debug("quieter");
  log.warn("loud");
  expect(lines.map((l) => JSON.parse(l).msg)).toEqual(["loud"]);
});
