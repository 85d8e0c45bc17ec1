import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { addKey, usageRows } from "../helpers/keys.ts";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { createAccount } from "../helpers/owner-ops.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";
import { anthropicClient, geminiClient } from "../helpers/sdk.ts";

// Issue 16: counting calls answer for models served only by keys of another format, with a
// local estimate (no OpenAI-format counting endpoint exists), free and leaving no usage.
let router: TestRouter;
let upstream: MockUpstream;
beforeAll(async () => {
  router = await startRouter({ pricing: { ChatPricing: { "*": { InputText: 1, OutputText: 2 } } } });
  upstream = startMockUpstream();
  upstream.route("POST", "/v1/chat/completions", () => json({ error: { message: "not expected" } }, 500));
  await addKey(router, { provider: `${upstream.url}/v1`, config: { provider_type: "standard", formats: ["openai"] } });
});
afterAll(async () => {
  await upstream?.stop();
  await router?.stop();
});

const MESSAGE = "Count the words of this sentence for me, please, as a test of the estimate.";

describe("token counts for a model only OpenAI-format keys serve", () => {
  test("Anthropic count_tokens (through the SDK): an estimate, marked as one, nothing upstream, no usage, no charge", async () => {
    const account = await createAccount(router, { CreditGranted: 5 });
    const client = anthropicClient(router.url, account.key);
    const { data, response } = await client.messages.countTokens({ model: "gpt-4o", system: "You are terse.", messages: [{ role: "user", content: MESSAGE }] }).withResponse();
    expect(data.input_tokens).toBe(Math.ceil((MESSAGE.length + "You are terse.".length) / 4));
    expect(response.headers.get("x-router-count")).toBe("estimated");
    expect(upstream.requests).toHaveLength(0);
    expect((await usageRows(router)).filter((row) => row.account_id === account.id)).toEqual([]);
    const status = (await (await fetch(`${router.url}/dashboard/status`, { headers: { authorization: `Bearer ${account.key}` } })).json()) as { balance: number };
    expect(status.balance).toBe(5);
  });

  test("Gemini countTokens (through the SDK) answers totalTokens the same way", async () => {
    const account = await createAccount(router, { CreditGranted: 5 });
    const result = await geminiClient(router.url, account.key).models.countTokens({ model: "gpt-4o", contents: MESSAGE });
    expect(result.totalTokens).toBe(Math.ceil(MESSAGE.length / 4));
    expect(upstream.requests).toHaveLength(0);
  });

  test("a model call in Anthropic's format to the same model is still translated, not estimated", async () => {
    upstream.reset();
    upstream.route("POST", "/v1/chat/completions", () =>
      json({ id: "c", object: "chat.completion", created: 1, model: "gpt-4o", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } }),
    );
    const message = await anthropicClient(router.url, router.ownerKey).messages.create({ model: "gpt-4o", max_tokens: 10, messages: [{ role: "user", content: "hi" }] });
    expect(message.content[0]).toMatchObject({ type: "text", text: "ok" });
    expect(upstream.requests).toHaveLength(1);
  });
});
