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

describe("spec 5 and 9: the key's header forms, and the paths that carry no version", () => {
  test("each family's SDK header reaches its paths; a key in the URL is refused even when valid; management paths have no /v1 form", async () => {
    const { router } = await scoped.gateway();
    const key = router.ownerKey;
    const get = (path: string, headers: Record<string, string>) => fetch(router.url + path, { headers });
    // Anthropic's SDK lists models with x-api-key and anthropic-version: its shape, not OpenAI's.
    const anthropic = await get("/v1/models", { "x-api-key": key, "anthropic-version": "2023-06-01" });
    expect(anthropic.status).toBe(200);
    expect(await anthropic.json()).toMatchObject({ data: expect.any(Array), has_more: false });
    // Gemini's SDK sends x-goog-api-key.
    const gemini = await get("/v1beta/models", { "x-goog-api-key": key });
    expect(gemini.status).toBe(200);
    expect(await gemini.json()).toMatchObject({ models: expect.any(Array) });
    // Elsewhere only the Bearer header counts.
    expect((await get("/dashboard/status", { "x-api-key": key })).status).toBe(401);
    // Spec 5.9: a secret never rides in a URL, so `?key=` is refused whatever it holds.
    const inUrl = await get(`/v1beta/models?key=${key}`, {});
    expect(inUrl.status).toBe(401);
    expect((await inUrl.json()).error).toMatchObject({ status: "UNAUTHENTICATED" });
    // Spec 9: management paths carry no version segment.
    expect((await api(router, "/x-keys")).status).toBe(200);
    expect((await api(router, "/v1/x-keys")).status).toBe(404);
    expect((await api(router, "/v1/dashboard/status")).status).toBe(404);
  });
});

describe("spec 4.3: usage_users belongs to /x-bill only", () => {
  test("/dashboard/bill has the aggregate record without the ranking; /x-bill adds it", async () => {
    const { router } = await scoped.gateway();
    const own = await api(router, "/dashboard/bill");
    expect(own.status).toBe(200);
    expect(own.body.object).toBe("bill_info");
    expect(own.body).not.toHaveProperty("usage_users");
    const descendants = await api(router, "/x-bill");
    expect(descendants.body).toMatchObject({ object: "bill_info", usage_users: [] });
  });
});
