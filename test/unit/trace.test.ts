import { describe, expect, test } from "bun:test";
import { attachMeta } from "../../src/http/context.ts";
import { startTrace } from "../../src/gateway/trace.ts";
import { MAX_USER_AGENT } from "../../src/metering/request-log.ts";

/** A request as the server hands it on, whose socket peer counts how often it is looked up (a system call each time). */
function request(headers: Record<string, string> = {}) {
  const made = new Request("http://router.test/v1/chat/completions", { method: "POST", headers });
  const lookups = { count: 0 };
  attachMeta(made, {
    id: "req_test",
    startedAt: 0,
    get peerIp() {
      lookups.count++;
      return "198.51.100.7";
    },
    server: undefined,
  });
  return { made, lookups };
}

describe("a call's request-log trace", () => {
  test("records the socket's peer and the user agent, cut short, when the log is on", () => {
    const { made, lookups } = request({ "user-agent": `sdk/${"x".repeat(MAX_USER_AGENT)}` });
    const trace = startTrace(made, { trustProxy: false, requestLogDays: 30 });
    expect(trace.clientIp).toBe("198.51.100.7");
    expect(trace.userAgent).toHaveLength(MAX_USER_AGENT);
    expect(trace.userAgent!.startsWith("sdk/x")).toBe(true);
    expect(lookups.count).toBe(1);
    expect(trace.attempts).toEqual([]);
    expect(trace.reading).toEqual([]);
  });

  test("behind a trusted proxy takes the address it added, without looking up the peer", () => {
    const { made, lookups } = request({ "x-forwarded-for": "203.0.113.9, 192.0.2.44" });
    const trace = startTrace(made, { trustProxy: true });
    expect(trace.clientIp).toBe("192.0.2.44");
    expect(lookups.count).toBe(0);
  });

  test("with the request log off, looks up nobody: the peer is never read, the user agent not kept", () => {
    const { made, lookups } = request({ "user-agent": "sdk/1.0" });
    const trace = startTrace(made, { trustProxy: false, requestLogDays: 0 });
    expect(lookups.count).toBe(0);
    expect(trace.clientIp).toBeUndefined();
    expect(trace.userAgent).toBeUndefined();
    // Key health still counts the attempts: the trace still gathers them.
    expect(trace.attempts).toEqual([]);
    expect(trace.reading).toEqual([]);
  });
});
