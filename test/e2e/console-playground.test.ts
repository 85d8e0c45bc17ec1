import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { launchChromium, recordedPage, signIn, type SeenRequest } from "../helpers/browser.ts";
import { addKey } from "../helpers/keys.ts";
import { sse, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { createAccount } from "../helpers/owner-ops.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";

// Issue 18: a playground at /console/playground where any account chats with one of its
// models through the router, streamed, and sees each answer's tokens and cost from the
// call's record (GET /x-requests/{request_id}).
let router: TestRouter;
let browser: Browser;
let upstream: MockUpstream;
const seen: SeenRequest[] = [];
const errors: string[] = [];
const chunk = (content: string | null, usage?: unknown) => ({
  id: "chatcmpl-pg",
  object: "chat.completion.chunk",
  created: 1,
  model: "play-model",
  choices: content === null ? [] : [{ index: 0, delta: { content }, finish_reason: null }],
  ...(usage !== undefined && { usage }),
});

beforeAll(async () => {
  upstream = startMockUpstream().route("POST", "/v1/chat/completions", () =>
    sse([chunk("Hello"), chunk(" from"), chunk(" the playground"), chunk(null, { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 })], { done: true, delayMs: 20 }),
  );
  router = await startRouter({ pricing: { ChatPricing: { "play-model": { InputText: 1000, OutputText: 2000 } } } });
  await addKey(router, { provider: `${upstream.url}/v1`, config: { provider_type: "standard", models: ["play-model"] } });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await upstream?.stop();
  await router?.stop();
});

describe("the console playground", () => {
  test("a plain account picks its model, the answer streams in, and its tokens and cost come from the call's record", async () => {
    const account = await createAccount(router, { CreditGranted: 10 });
    const { context, page } = await recordedPage(browser, seen, errors);
    await signIn(page, `${router.url}/console/`, account.key);
    await page.waitForURL(/\/console\/$/);
    // Every account's pages include the playground.
    await page.getByRole("navigation", { name: "Console pages" }).getByRole("link", { name: "Playground" }).click();
    await page.waitForURL(/\/console\/playground$/);
    await page.getByRole("heading", { name: "Chat with a model" }).waitFor();
    expect(await page.getByLabel("Model", { exact: true }).inputValue()).toBe("play-model");
    await page.getByLabel("Message").fill("Say hello");
    await page.getByRole("button", { name: "Send" }).click();
    await page.getByText("Hello from the playground").waitFor();
    const cost = page.getByTestId("answer-cost");
    await cost.waitFor();
    // (12 × 1000 + 4 × 2000) credits per million tokens = 0.02 credits.
    expect(await cost.textContent()).toMatch(/^12 prompt \+ 4 completion tokens · 0\.02\d* credits$/);
    expect(upstream.requests.at(-1)?.json).toMatchObject({ model: "play-model", stream: true, messages: [{ role: "user", content: "Say hello" }] });
    expect(errors).toEqual([]);
    await context.close();
  }, 30_000);
});
