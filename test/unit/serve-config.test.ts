import { expect, test } from "bun:test";
import { rejectUnknownFlags, UsageError } from "../../src/cli/flags.ts";
import { resolveServeConfig, serveArgs } from "../../src/cli/serve.ts";

test("defaults, then ROUTER_* environment variables, then flags (flags win)", () => {
  const defaults = resolveServeConfig({}, {});
  expect(defaults).toMatchObject({ host: "127.0.0.1", port: 8080, dataDir: "./data", maxBody: 64 * 1024 * 1024, trustProxy: false, graceSeconds: 30, logLevel: "info" });
  const fromEnv = resolveServeConfig({}, { ROUTER_PORT: "9000", ROUTER_MAX_BODY: "1024", ROUTER_TRUST_PROXY: "true", ROUTER_TIMEZONE: "Asia/Tokyo" });
  expect(fromEnv).toMatchObject({ port: 9000, maxBody: 1024, trustProxy: true, timeZone: "Asia/Tokyo" });
  const flagsWin = resolveServeConfig({ port: "9100", "log-level": "warn" }, { ROUTER_PORT: "9000", ROUTER_LOG_LEVEL: "debug" });
  expect(flagsWin).toMatchObject({ port: 9100, logLevel: "warn" });
});

test("bad values are usage errors naming the flag", () => {
  const bad: Array<[Record<string, string>, RegExp]> = [
    [{ port: "eighty" }, /--port/],
    [{ port: "70000" }, /--port/],
    [{ timezone: "Mars/Olympus" }, /--timezone/],
    [{ "log-level": "loud" }, /--log-level/],
    [{ "max-body": "0" }, /--max-body/],
    [{ "tls-cert": "/nonexistent.pem", "tls-key": "/nonexistent.key" }, /--tls-cert/],
    [{ "base-url": "not a url" }, /--base-url/],
  ];
  for (const [args, message] of bad) {
    expect(() => resolveServeConfig(args, {})).toThrow(message);
    expect(() => resolveServeConfig(args, {})).toThrow(UsageError);
  }
});

test("unknown flags are refused, known ones and their kebab forms pass", () => {
  expect(() => rejectUnknownFlags(["--prot", "80"], serveArgs)).toThrow(/unknown flag --prot/);
  expect(() => rejectUnknownFlags(["--port", "80", "--max-body=10", "--trust-proxy", "--no-trust-proxy"], serveArgs)).not.toThrow();
});
