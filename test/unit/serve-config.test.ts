import { expect, test } from "bun:test";
import { parseArgs } from "citty";
import { rejectUnknownFlags, UsageError } from "../../src/cli/flags.ts";
import { resolveServeConfig, serveArgs, serveWarnings } from "../../src/cli/serve.ts";

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
    [{ "log-format": "xml" }, /--log-format must be one of logfmt, json, got "xml"/],
    [{ "max-body": "0" }, /--max-body/],
    [{ "tls-cert": "/nonexistent.pem", "tls-key": "/nonexistent.key" }, /--tls-cert/],
    [{ "base-url": "not a url" }, /--base-url/],
    [{ "cors-origins": "https://chat.example.com/app" }, /--cors-origins: "https:\/\/chat.example.com\/app" is not an origin/],
    // README: --signup is a BYOK flag; TLS needs both halves.
    [{ signup: "true" }, /--signup needs --byok/],
    [{ "tls-key": import.meta.path }, /--tls-cert and --tls-key must be given together/],
  ];
  for (const [args, message] of bad) {
    expect(() => resolveServeConfig(args, {})).toThrow(message);
    expect(() => resolveServeConfig(args, {})).toThrow(UsageError);
  }
});

test("--cors-origins: * by default, off, or a list of origins, from ROUTER_CORS_ORIGINS or the flag", () => {
  expect(resolveServeConfig({}, {}).corsOrigins).toBe("*");
  expect(resolveServeConfig({}, { ROUTER_CORS_ORIGINS: "off" }).corsOrigins).toBe("off");
  expect(resolveServeConfig({ "cors-origins": "https://a.example,https://b.example:8443" }, { ROUTER_CORS_ORIGINS: "off" }).corsOrigins).toEqual(["https://a.example", "https://b.example:8443"]);
});

test("--log-format: logfmt by default, json from ROUTER_LOG_FORMAT or the flag", () => {
  expect(resolveServeConfig({}, {}).logFormat).toBe("logfmt");
  expect(resolveServeConfig({}, { ROUTER_LOG_FORMAT: "json" }).logFormat).toBe("json");
  expect(resolveServeConfig({ "log-format": "logfmt" }, { ROUTER_LOG_FORMAT: "json" }).logFormat).toBe("logfmt");
});

test("unknown flags are refused, known ones and their kebab forms pass", () => {
  expect(() => rejectUnknownFlags(["--prot", "80"], serveArgs)).toThrow(/unknown flag --prot/);
  expect(() => rejectUnknownFlags(["--port", "80", "--max-body=10", "--trust-proxy", "--no-trust-proxy"], serveArgs)).not.toThrow();
});

test("--database and --redis: flags or ROUTER_DATABASE / ROUTER_REDIS; Redis needs the database; errors never quote the URL", () => {
  expect(resolveServeConfig({}, {})).toMatchObject({ database: undefined, redis: undefined });
  const both = resolveServeConfig({}, { ROUTER_DATABASE: "postgres://u:pw@db/router?sslmode=require", ROUTER_REDIS: "rediss://:pw@cache:6380" });
  expect(both).toMatchObject({ database: "postgres://u:pw@db/router?sslmode=require", redis: "rediss://:pw@cache:6380" });
  expect(resolveServeConfig({ database: "postgresql://db/router" }, {}).database).toBe("postgresql://db/router");
  const refused: Array<[Record<string, string>, Record<string, string>, RegExp]> = [
    [{ redis: "redis://:hunter2@cache" }, {}, /--redis needs --database/],
    [{}, { ROUTER_REDIS: "redis://cache" }, /--redis needs --database/],
    [{ database: "mysql://root:hunter2@db/x" }, {}, /--database must be a postgres:\/\/ or postgresql:\/\/ URL, got mysql:\/\/root:\*\*\*@db\/x/],
    [{}, { ROUTER_DATABASE: "mysql://root:hunter2@db/x" }, /ROUTER_DATABASE must be a postgres:\/\/ or postgresql:\/\/ URL/],
    [{ database: "not a url hunter2" }, {}, /--database is not a URL/],
    [{ database: "postgres:///x" }, {}, /--database names no host/],
    [{ database: "postgres://db/x", redis: "memcached://hunter2@cache" }, {}, /--redis must be a Redis URL/],
  ];
  for (const [args, env, message] of refused) {
    expect(() => resolveServeConfig(args, env)).toThrow(message);
    expect(() => resolveServeConfig(args, env)).toThrow(UsageError);
    expect(() => resolveServeConfig(args, env)).not.toThrow(/hunter2/);
  }
});

test("warnings: a password given as a flag (not through the environment), a database without Redis; never the password", () => {
  const flagged = { database: "postgres://u:hunter2@db/x", redis: "redis://:hunter2@cache" };
  const warnings = serveWarnings(flagged, resolveServeConfig(flagged, {}));
  expect(warnings).toHaveLength(2);
  expect(warnings[0]).toContain("ROUTER_DATABASE");
  expect(warnings[1]).toContain("ROUTER_REDIS");
  for (const warning of warnings) expect(warning).not.toContain("hunter2");
  const env = { ROUTER_DATABASE: "postgres://u:hunter2@db/x", ROUTER_REDIS: "redis://cache" };
  expect(serveWarnings({}, resolveServeConfig({}, env))).toEqual([]);
  const alone = serveWarnings({ database: "postgres://u@db/x" }, resolveServeConfig({ database: "postgres://u@db/x" }, {}));
  expect(alone).toHaveLength(1);
  expect(alone[0]).toContain("--redis");
  expect(serveWarnings({}, resolveServeConfig({}, {}))).toEqual([]);
  // Sign-up mail without a sender goes out from router@localhost: said at start.
  const byok = { byok: true, signup: true };
  const unsent = serveWarnings({}, resolveServeConfig(byok, { ROUTER_SIGNUP_SMTP: "smtp://mail.example.com:587" }));
  expect(unsent).toHaveLength(1);
  expect(unsent[0]).toContain("--signup-from");
  expect(serveWarnings({}, resolveServeConfig(byok, { ROUTER_SIGNUP_SMTP: "smtp://mail.example.com:587", ROUTER_SIGNUP_FROM: "router@example.com" }))).toEqual([]);
});

test("--request-log-days: default 30, ROUTER_REQUEST_LOG_DAYS, the flag wins; 0 turns the log off; at most 36,500 (a cutoff past that overflowed PostgreSQL's dates)", () => {
  expect(resolveServeConfig({}, {}).requestLogDays).toBe(30);
  expect(resolveServeConfig({}, { ROUTER_REQUEST_LOG_DAYS: "7" }).requestLogDays).toBe(7);
  expect(resolveServeConfig({ "request-log-days": "90" }, { ROUTER_REQUEST_LOG_DAYS: "7" }).requestLogDays).toBe(90);
  expect(resolveServeConfig({ "request-log-days": "0" }, {}).requestLogDays).toBe(0);
  expect(resolveServeConfig({}, { ROUTER_REQUEST_LOG_DAYS: "0" }).requestLogDays).toBe(0);
  for (const bad of ["-1", "1.5", "a week", "36501", "99999999999"]) {
    expect(() => resolveServeConfig({ "request-log-days": bad }, {})).toThrow(/--request-log-days/);
  }
});

test("an on/off flag's variable takes the words the README lists, and --no-<flag> wins over it", () => {
  for (const [value, on] of [["true", true], ["1", true], ["yes", true], ["on", true], ["false", false], ["0", false], ["no", false], ["off", false]] as const) {
    expect(resolveServeConfig({}, { ROUTER_TRUST_PROXY: value }).trustProxy).toBe(on);
  }
  expect(resolveServeConfig(parseArgs(["--no-trust-proxy"], serveArgs), { ROUTER_TRUST_PROXY: "true" }).trustProxy).toBe(false);
});
