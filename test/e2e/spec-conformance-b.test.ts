import { describe, expect, test } from "bun:test";
import { api } from "../helpers/owner-ops.ts";
import { hang } from "../helpers/mock-upstream.ts";
import { perTest } from "../helpers/scoped.ts";

/**
 * Conformance with router-service-spec.md, sections 4.3 to 9: requirements a client
 * or checker relies on that no other test pins down, and the findings of the review.
 */

const scoped = perTest();

describe("spec 7: an upstream that does not answer in time is 'temporarily unavailable' (502/503)", () => {
  // The status table names 502 and 503 for an unavailable upstream, and rule 1 has clients
  // retry only 429, 502, 503 and network failures: a 504 would be a status outside the
  // table that a conforming client does not retry, for the most transient failure there is.
  test("every attempt timed out: 502 upstream_timeout in each family's envelope", async () => {
    const { router, upstream } = await scoped.gateway({ config: { firstByteTimeoutMs: 300, maxAttempts: 1 } });
    upstream.route("POST", /.*/, () => hang());
    const openai = await api(router, "/v1/chat/completions", { body: { model: "gpt-4o", messages: [{ role: "user", content: "hi" }] } });
    expect(openai.status).toBe(502);
    expect(openai.body.error).toMatchObject({ type: "api_error", code: "upstream_timeout" });
    const anthropic = await api(router, "/v1/messages", { body: { model: "claude-x", max_tokens: 5, messages: [{ role: "user", content: "hi" }] } });
    expect(anthropic.status).toBe(502);
    expect(anthropic.body).toMatchObject({ type: "error", error: { type: "api_error" } });
    const gemini = await api(router, "/v1beta/models/gemini-x:generateContent", { body: { contents: [{ role: "user", parts: [{ text: "hi" }] }] } });
    expect(gemini.status).toBe(502);
    expect(gemini.body.error).toMatchObject({ code: 502, status: "UNAVAILABLE" });
  });
});
