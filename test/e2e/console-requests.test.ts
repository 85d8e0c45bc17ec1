import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { launchChromium, recordedPage, screenshot, signIn, type SeenRequest } from "../helpers/browser.ts";
import { addKey } from "../helpers/keys.ts";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { chatRequestId, createAccount, MANAGER_RESOURCES, type CreatedAccount } from "../helpers/owner-ops.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";

// Issue 17 (console): the Requests page for every account kind, scoped by the server:
// filters, pages, a live tail, a drawer with one call's attempts, and a bill's day
// linking to that day's calls.
let router: TestRouter;
let upstream: MockUpstream;
let browser: Browser;
let manager: CreatedAccount;
let child: CreatedAccount;
let alice: CreatedAccount;
const seen: SeenRequest[] = [];
const errors: string[] = [];

const answer = (model: string) =>
  json({
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 1,
    model,
    choices: [{ index: 0, message: { role: "assistant", content: "hello" }, finish_reason: "stop" }],
    usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
  });

/** One chat call as `key`; its X-Request-Id. */
const call = (key: string, model: string) => chatRequestId(router, key, model);

const flushed = () => router.deps.usageRecorder.flush();

beforeAll(async () => {
  router = await startRouter({ pricing: { ChatPricing: { "*": { InputText: 2, OutputText: 8 } } } });
  upstream = startMockUpstream()
    .route("POST", "/good/v1/chat/completions", (request) => answer((request.json as { model: string }).model))
    .route("POST", "/bad/v1/chat/completions", () => json({ error: { message: "upstream exploded", type: "server_error" } }, 500));
  await addKey(router, { provider: `${upstream.url}/good/v1`, name: "good-key", noSleep: true });
  await addKey(router, { provider: `${upstream.url}/bad/v1`, name: "bad-key", level: 2, noSleep: true });
  await router.deps.settings.update({ LEVEL_MAPPER: "broken-*=2" });
  manager = await createAccount(router, { CreditGranted: 10, Resources: MANAGER_RESOURCES, Name: "team-lead" });
  child = await createAccount(router, { CreditGranted: 1, Name: "team-child" }, manager.key);
  alice = await createAccount(router, { CreditGranted: 1, Name: "alice-solo" });
  await call(alice.key, "model-a");
  await call(alice.key, "model-b");
  await call(child.key, "model-a");
  await call(router.ownerKey, "broken-model");
  await flushed();
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await upstream?.stop();
  await router?.stop();
});

const calls = (page: Page) => page.getByRole("region", { name: "Model calls" });

describe("the Requests page", () => {
  test("the owner sees every call, filters by status, and opens a call's attempts in the drawer", async () => {
    const { context, page } = await recordedPage(browser, seen, errors);
    await signIn(page, `${router.url}/console/`, router.ownerKey);
    await page.waitForURL(/\/console\/owner$/);
    const nav = page.getByRole("navigation", { name: "Console pages" });
    await nav.getByRole("link", { name: "Requests" }).click();
    await page.waitForURL(/\/console\/requests$/);
    await calls(page).getByRole("row", { name: /alice-solo/ }).first().waitFor();
    // Four calls: alice's two, the child's, the owner's failed one.
    expect(await calls(page).locator("tbody tr").count()).toBe(4);

    await page.getByLabel("Status").fill("5xx");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await page.waitForURL(/status=5xx/);
    await calls(page).locator("tbody tr").first().getByText("broken-model").waitFor();
    await page.waitForFunction(() => document.querySelectorAll('[aria-label="Model calls"] tbody tr').length === 1);

    await calls(page).getByRole("button", { name: /^Details of call/ }).click();
    const drawer = page.getByRole("dialog");
    await drawer.getByRole("region", { name: "Upstream attempts" }).waitFor();
    const attempt = drawer.getByRole("region", { name: "Upstream attempts" }).locator("tbody tr").first();
    expect(await attempt.textContent()).toContain("bad-key #2");
    expect(await attempt.textContent()).toContain("500");
    expect(await attempt.textContent()).toContain("upstream exploded");
    expect(await drawer.getByText("Effective model").isVisible()).toBe(true);
    await screenshot(page, "requests-drawer");
    await page.keyboard.press("Escape");
    await drawer.waitFor({ state: "detached" });
    // Focus is back on the row's button (moved there on the next frame after the drawer closes).
    await page.waitForFunction(() => /^Details of call/.test(document.activeElement?.getAttribute("aria-label") ?? ""), undefined, { timeout: 2000 });
    expect(await page.evaluate(() => document.activeElement?.getAttribute("aria-label"))).toMatch(/^Details of call/);

    await page.getByRole("button", { name: "Clear" }).click();
    await page.waitForFunction(() => document.querySelectorAll('[aria-label="Model calls"] tbody tr').length === 4);
    // The key filter goes out as key_id (a ?key= would be refused as a key in the URL).
    await page.getByLabel("Key ID").fill("1");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await page.waitForFunction(() => document.querySelectorAll('[aria-label="Model calls"] tbody tr').length === 3);
    expect(seen.some((r) => r.url.includes("/x-requests?") && r.url.includes("key_id=1"))).toBe(true);
    expect(seen.some((r) => /[?&]key=/.test(r.url))).toBe(false);
    expect(errors).toEqual([]);
    await context.close();
  }, 60_000);

  test("the live tail adds new calls at the top without a reload", async () => {
    const { context, page } = await recordedPage(browser, seen, errors);
    await signIn(page, `${router.url}/console/requests`, router.ownerKey);
    await page.waitForURL(/\/console\/owner$/);
    await page.goto(`${router.url}/console/requests`);
    await calls(page).locator("tbody tr").first().waitFor();
    const before = await calls(page).locator("tbody tr").count();
    await page.getByLabel(/^Live tail/).check();
    await call(alice.key, "tail-model");
    await flushed();
    await calls(page).locator("tbody tr").first().getByText("tail-model").waitFor({ timeout: 10_000 });
    expect(await calls(page).locator("tbody tr").count()).toBe(before + 1);
    expect(errors).toEqual([]);
    await context.close();
  }, 60_000);

  test("a manager sees its subtree without key names; a plain account its own calls, without the account filter", async () => {
    const { context, page } = await recordedPage(browser, seen, errors);
    await signIn(page, `${router.url}/console/`, manager.key);
    await page.waitForURL(/\/console\/accounts$/);
    await page.goto(`${router.url}/console/requests`);
    await calls(page).getByRole("row", { name: /team-child/ }).waitFor();
    expect(await calls(page).locator("tbody tr").count()).toBe(1);
    expect(await page.getByLabel("Key ID").count()).toBe(0);
    await calls(page).getByRole("button", { name: /^Details of call/ }).click();
    const attempts = page.getByRole("dialog").getByRole("region", { name: "Upstream attempts" });
    await attempts.waitFor();
    expect(await attempts.getByRole("columnheader", { name: /Key/ }).count()).toBe(0);
    expect(await attempts.textContent()).not.toContain("good-key");
    await page.getByRole("button", { name: "Close" }).click();
    await context.close();

    const { context: aliceContext, page: own } = await recordedPage(browser, seen, errors);
    await signIn(own, `${router.url}/console/`, alice.key);
    await own.waitForURL(/\/console\/$/);
    // The links render after the page script runs: wait for the last before reading them all.
    await own.getByRole("navigation", { name: "Console pages" }).getByRole("link", { name: "Playground" }).waitFor();
    await expect(own.getByRole("navigation", { name: "Console pages" }).getByRole("link").allTextContents()).resolves.toEqual(["My usage", "Requests", "Playground"]);
    await own.goto(`${router.url}/console/requests`);
    await calls(own).locator("tbody tr").first().waitFor();
    const texts = await calls(own).locator("tbody tr").allTextContents();
    expect(texts.every((t) => !t.includes("team-child") && !t.includes("broken-model"))).toBe(true);
    expect(await own.getByLabel("Account").count()).toBe(0);
    await aliceContext.close();
    expect(errors).toEqual([]);
  }, 60_000);

  test("a bill's day links to that day's calls of that model; at 390 px nothing scrolls sideways", async () => {
    const { context, page } = await recordedPage(browser, seen, errors);
    await page.setViewportSize({ width: 390, height: 844 });
    await signIn(page, `${router.url}/console/`, alice.key);
    await page.waitForURL(/\/console\/$/);
    // The page is up (its live usage shown) before the section is chosen, as a user would.
    await page.getByTestId("live-today").waitFor();
    await page.goto(`${router.url}/console/#bills`);
    const today = new Date().toISOString().slice(0, 10);
    await page.getByRole("link", { name: `Calls of model-b on ${today}` }).click();
    await page.waitForURL(/\/console\/requests\?/);
    expect(new URL(page.url()).searchParams.get("since")).toBe(today);
    expect(new URL(page.url()).searchParams.get("until")).toBe(today);
    await calls(page).locator("tbody tr").first().waitFor();
    expect(await page.getByRole("textbox", { name: "Model", exact: true }).inputValue()).toBe("model-b");
    expect(await calls(page).locator("tbody tr").count()).toBe(1);
    // The table fits the screen: the columns that matter in the row, the rest under More.
    expect(await calls(page).evaluate((el) => el.scrollWidth <= el.clientWidth + 1)).toBe(true);
    await calls(page).getByRole("button", { name: /^Details of call/ }).click();
    const drawer = page.getByRole("dialog");
    await drawer.getByText("Effective model").waitFor();
    expect(await drawer.evaluate((el) => el.scrollWidth <= el.clientWidth + 1)).toBe(true);
    const attempts = drawer.getByRole("region", { name: "Upstream attempts" });
    expect(await attempts.evaluate((el) => el.scrollWidth <= el.clientWidth + 1)).toBe(true);
    await screenshot(page, "requests-phone");
    expect(errors).toEqual([]);
    await context.close();
  }, 60_000);
});
