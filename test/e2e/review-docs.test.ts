import { describe, expect, test } from "bun:test";
import { api } from "../helpers/owner-ops.ts";
import { waitFor } from "../helpers/router.ts";
import { perTest } from "../helpers/scoped.ts";

/**
 * What README.md and docs/api.md promise, checked against the router (a review of the
 * documents): the first groups failed before their fixes; the last holds claims the
 * review checked and found right, kept where no other test held them.
 */

const scope = perTest();

describe("docs/api.md, Request log: Anthropic-format answers carry request-id as well as X-Request-Id", () => {
  // The Anthropic SDKs read `request-id` (message._request_id, APIError.requestID), and
  // Claude Code prints it: that id must be the one GET /x-requests/{id} knows.
  test("an answer, an upstream error passed on and a refusal on /v1/messages; not on other families", async () => {
    const { router, upstream } = await scope.gateway();
    let status = 200;
    upstream.route("POST", "/v1/messages", () =>
      status === 200
        ? Response.json({ id: "msg_1", type: "message", role: "assistant", model: "claude-x", content: [{ type: "text", text: "hi" }], stop_reason: "end_turn", usage: { input_tokens: 3, output_tokens: 1 } })
        : Response.json({ type: "error", error: { type: "invalid_request_error", message: "bad" } }, { status: 400 }),
    );
    const body = JSON.stringify({ model: "claude-x", max_tokens: 8, messages: [{ role: "user", content: "hi" }] });
    const call = (path: string, key?: string | null) => router.fetch(path, { method: "POST", key, headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" }, body });
    const seen: Array<[number, string | null, string | null]> = [];
    for (const res of [await call("/v1/messages"), ((status = 400), await call("/v1/messages")), await call("/v1/messages", "sk-rt-unknown")]) {
      await res.arrayBuffer();
      seen.push([res.status, res.headers.get("x-request-id"), res.headers.get("request-id")]);
    }
    expect(seen.map(([s]) => s)).toEqual([200, 400, 401]);
    for (const [, xid, rid] of seen) {
      expect(xid).toMatch(/^req_[0-9a-f]{32}$/);
      expect(rid).toBe(xid);
    }
    // The id an Anthropic client reads is the one the request log files the call under.
    const logged = await waitFor(async () => {
      const reply = await api(router, `/x-requests/${seen[0]![2]}`);
      return reply.status === 200 ? reply : undefined;
    }, 5000, "the call's request-log record");
    expect(logged!.body.family).toBe("anthropic");
    // Other families keep their own single header.
    const openai = await router.fetch("/v1/models");
    expect(openai.headers.get("x-request-id")).toMatch(/^req_/);
    expect(openai.headers.get("request-id")).toBeNull();
  });
});
