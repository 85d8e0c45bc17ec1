import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { launchChromium, recordedPage, screenshot, signIn, type SeenRequest } from "../helpers/browser.ts";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";
import { openaiClient } from "../helpers/sdk.ts";

// The console in a real browser (Debian's chromium through playwright-core) against an
// in-process router and an HTTPS mock upstream: the owner configures, a sub-account
// is created and credited, SDK calls show up in that account's own views.
let router: TestRouter;
let mock: MockUpstream;
let browser: Browser;
const contexts: BrowserContext[] = [];
const seen: SeenRequest[] = [];
const pageErrors: string[] = [];
const secrets: string[] = [];
let owner: Page;
let aliceKey = "";
let aliceId = 0;

async function freshPage(): Promise<Page> {
  const { context, page } = await recordedPage(browser, seen, pageErrors);
  contexts.push(context);
  return page;
}

beforeAll(async () => {
  mock = startMockUpstream().route("POST", "/v1/chat/completions", (req) =>
    json({
      id: "chatcmpl-console",
      object: "chat.completion",
      created: 1,
      model: req.json.model,
      choices: [{ index: 0, message: { role: "assistant", content: "hello from the mock" }, finish_reason: "stop" }],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    }),
  );
  router = await startRouter();
  secrets.push(router.ownerKey);
  browser = await launchChromium();
  owner = await freshPage();
});

afterAll(async () => {
  await browser?.close();
  await router?.stop();
  await mock?.stop();
});

/** Form controls without an accessible label (a <label>, aria-label or aria-labelledby). */
const unlabelled = (page: Page) =>
  page.evaluate(() =>
    [...document.querySelectorAll("input, select, textarea")]
      .filter((el) => !(el as HTMLInputElement).labels?.length && !el.getAttribute("aria-label") && !el.getAttribute("aria-labelledby"))
      .map((el) => el.outerHTML.slice(0, 80)),
  );

const config = async () => ((await (await router.fetch("/x-config")).json()) as { configs: Record<string, any> }).configs;

describe("console in chromium", () => {
  test("the owner signs in, lands on the owner page and adds a provider key with a model pattern", async () => {
    await signIn(owner, `${router.url}/console/`, router.ownerKey);
    await owner.waitForURL(/\/console\/owner$/);
    // The links render after the page script runs: wait for the last before reading them all.
    await owner.getByRole("navigation", { name: "Console pages" }).getByRole("link", { name: "Playground" }).waitFor();
    await expect(owner.getByRole("navigation", { name: "Console pages" }).getByRole("link").allTextContents()).resolves.toEqual(["Owner", "Accounts", "My usage", "Requests", "Playground"]);

    await owner.getByRole("button", { name: "+ Add provider key" }).click();
    const form = owner.locator('form[aria-labelledby="key-form-h"]');
    await form.getByLabel("Name").fill("mock upstream");
    await form.getByLabel("Provider URL").fill(mock.url);
    await form.getByLabel("Secret key").fill("sk-mock-upstream-secret-0123456789abcdef");
    await form.getByLabel(/^Level/).fill("2");
    await form.getByLabel("Model pattern for this key's Level").fill("mock-*");
    await form.getByLabel("Provider type").selectOption("azure");
    await form.getByRole("button", { name: "+ Add row" }).first().click();
    expect(await unlabelled(owner)).toEqual([]);
    await form.getByLabel("Provider type").selectOption("standard");
    await form.getByRole("button", { name: "Add key" }).click();
    await owner.getByText("Key 1 added to Level 2. LEVEL_MAPPER: mock-*=2.").waitFor();
    expect((await config()).LEVEL_MAPPER).toBe("mock-*=2");
    const row = owner.getByRole("row", { name: /mock upstream/ });
    await expect(row.textContent()).resolves.toContain("…pstream-secret-0123456789abcdef".slice(-20));

    // Sleep shows the reason from the full record; wake brings it back.
    await owner.getByRole("button", { name: "Sleep key 1 (mock upstream)" }).click();
    await owner.getByText("Asleep (manual) until woken").waitFor();
    await owner.getByRole("button", { name: "Wake key 1 (mock upstream)" }).click();
    await owner.getByRole("row", { name: /mock upstream/ }).getByText("Awake").waitFor();
    await screenshot(owner, "owner");
  }, 30_000);

  test("mapper editors validate as the owner types and save", async () => {
    await owner.goto(`${router.url}/console/owner#routing`);
    const mapper = owner.getByTestId("mapper-MODEL_MAPPER");
    await mapper.getByRole("button", { name: "+ Add row" }).click();
    await mapper.getByLabel("Requested model pattern, row 1").fill("alias model");
    await mapper.getByLabel("Target model, row 1").fill("mock-gpt");
    await mapper.getByText("No spaces in a pattern").waitFor();
    expect(await mapper.getByRole("button", { name: "Save MODEL_MAPPER" }).isDisabled()).toBe(true);
    await mapper.getByLabel("Requested model pattern, row 1").fill("alias-model");
    await mapper.getByRole("button", { name: "Save MODEL_MAPPER" }).click();
    await mapper.getByText("MODEL_MAPPER saved").waitFor();

    const switchOver = owner.getByTestId("mapper-SWITCH_OVER");
    for (const [i, [a, b]] of [["2", "3"], ["3", "2"]].entries()) {
      await switchOver.getByRole("button", { name: "+ Add row" }).click();
      await switchOver.getByLabel(`Primary Level, row ${i + 1}`).fill(a!);
      await switchOver.getByLabel(`Backup Level, row ${i + 1}`).fill(b!);
    }
    await switchOver.getByText("Cycle: 2 → 3 → 2").waitFor();
    expect(await switchOver.getByRole("button", { name: "Save SWITCH_OVER" }).isDisabled()).toBe(true);
    await switchOver.getByRole("button", { name: "Remove row 2" }).click();
    await switchOver.getByRole("button", { name: "Save SWITCH_OVER" }).click();
    await switchOver.getByText("SWITCH_OVER saved").waitFor();

    // Price the mock's model so the calls below cost credit.
    await owner.goto(`${router.url}/console/owner#pricing`);
    await owner.getByRole("button", { name: "+ Add price" }).click();
    await owner.getByLabel("Model pattern, row 3").fill("mock-*");
    await owner.getByLabel("Price (USD), row 3").fill("1000");
    await owner.getByRole("button", { name: "Save prices" }).click();
    await owner.getByText("Prices saved").waitFor();

    const saved = await config();
    expect(saved.MODEL_MAPPER).toBe("alias-model=mock-gpt");
    expect(saved.SWITCH_OVER).toBe("2=3");
    // The editors read the export back into rows.
    await owner.goto(`${router.url}/console/owner#routing`);
    expect(await owner.getByTestId("mapper-MODEL_MAPPER").getByLabel("Requested model pattern, row 1").inputValue()).toBe("alias-model");
    expect(await owner.getByTestId("mapper-MODEL_MAPPER").getByLabel("Target model, row 1").inputValue()).toBe("mock-gpt");
    expect(await owner.getByTestId("mapper-LEVEL_MAPPER").getByLabel("Model pattern, row 1").inputValue()).toBe("mock-*");
    expect(await owner.getByTestId("mapper-SWITCH_OVER").getByLabel("Backup Level, row 1").inputValue()).toBe("3");
    expect(saved.PRICING.ChatPricing["mock-*"]).toEqual({ InputText: 1000 });
  }, 30_000);

  test("the owner creates a limited sub-account and credits it after a dry run", async () => {
    await owner.goto(`${router.url}/console/accounts`);
    await owner.getByRole("button", { name: "+ Create account" }).click();
    const form = owner.locator('form[aria-labelledby="acct-form-h"]');
    await form.getByLabel("Email").first().fill("alice@example.com");
    await form.getByLabel("Name", { exact: true }).fill("alice-team");
    await form.getByLabel("Requests per minute (RPM)").fill("100");
    await form.getByLabel("Daily spending limit (credits)").fill("50");
    await form.getByRole("button", { name: "+ Add model limit" }).click();
    await form.getByLabel("Model pattern, row 1").fill("mock-*");
    await form.getByLabel("RPM, row 1").fill("60");
    expect(await unlabelled(owner)).toEqual([]);
    await form.getByRole("button", { name: "Create account" }).click();
    const keyBox = owner.getByLabel("The new account's API key.");
    await keyBox.waitFor();
    aliceKey = await keyBox.inputValue();
    expect(aliceKey).toMatch(/^sk-rt-[A-Za-z0-9]{43}$/);
    secrets.push(aliceKey);

    const created = (await (await router.fetch("/x-users/alice-team")).json()) as Record<string, any>;
    aliceId = created.ID;
    expect(created).toMatchObject({ RPM: 100, DailyLimit: 50, ModelLimits: { "mock-*": { rpm: 60 } }, Balance: 0 });

    await owner.getByLabel("Select alice-team for batch credit").check();
    await owner.goto(`${router.url}/console/accounts#credit`);
    await expect(owner.getByLabel("Account IDs").inputValue()).resolves.toBe(String(aliceId));
    await owner.getByLabel("Credit per account").fill("25");
    expect(await owner.getByRole("button", { name: "Apply" }).isDisabled()).toBe(true);
    await owner.getByRole("button", { name: "Preview (dry run)" }).click();
    await owner.getByTestId("batch-preview").getByText("would apply").waitFor();
    // The preview names the account, not only its ID.
    await owner.getByTestId("batch-preview").getByRole("cell", { name: "alice-team" }).waitFor();
    expect(((await (await router.fetch(`/x-users/${aliceId}`)).json()) as any).Balance).toBe(0);
    await owner.getByRole("button", { name: "Apply" }).click();
    await owner.getByTestId("batch-applied").waitFor();
    expect(((await (await router.fetch(`/x-users/${aliceId}`)).json()) as any).Balance).toBe(25);
    await owner.goto(`${router.url}/console/accounts#list`);
    await owner.getByRole("row", { name: /alice-team/ }).waitFor();
    await screenshot(owner, "accounts");
  }, 30_000);

  test("SDK calls as the sub-account appear in its live view and bill chart", async () => {
    const client = openaiClient(router.url, aliceKey);
    for (let i = 0; i < 3; i++) {
      const reply = await client.chat.completions.create({ model: "alias-model", max_tokens: 20, messages: [{ role: "user", content: "hi" }] });
      expect(reply.choices[0]!.message.content).toBe("hello from the mock");
    }
    expect(mock.requests.filter((r) => r.path === "/v1/chat/completions").map((r) => r.json.model)).toEqual(["mock-gpt", "mock-gpt", "mock-gpt"]);
    // Usage is written in batches: make all three calls visible before the page first polls.
    await router.deps.usageRecorder.flush();

    const alice = await freshPage();
    await signIn(alice, `${router.url}/console/owner`, aliceKey);
    await alice.waitForURL(/\/console\/$/);
    // The links render after the page script runs: wait for the last before reading them all.
    await alice.getByRole("navigation", { name: "Console pages" }).getByRole("link", { name: "Playground" }).waitFor();
    await expect(alice.getByRole("navigation", { name: "Console pages" }).getByRole("link").allTextContents()).resolves.toEqual(["My usage", "Requests", "Playground"]);
    const today = alice.getByTestId("live-today");
    await today.getByRole("row", { name: /mock-gpt/ }).waitFor({ timeout: 12_000 });
    expect(await today.locator(".stat .value").first().textContent()).toBe("3");
    expect(await today.getByRole("row", { name: /mock-gpt/ }).textContent()).toContain("0.03");
    await screenshot(alice, "user");

    await alice.goto(`${router.url}/console/#bills`);
    const chart = alice.getByTestId("bill-cost-chart");
    await chart.locator("canvas").waitFor();
    await expect(chart.getByRole("img").getAttribute("aria-label")).resolves.toContain("mock-gpt");
    const item = alice.getByRole("region", { name: "Line items per day and model" }).getByRole("row", { name: /mock-gpt/ });
    expect(await item.textContent()).toMatch(/mock-gpt\s*3\s*30\s*15\s*0\.03/);
    await screenshot(alice, "user-bills");
    expect(await unlabelled(alice)).toEqual([]);
    await alice.reload();
    await alice.getByTestId("bill-cost-chart").waitFor();
    await alice.keyboard.press("Tab");
    expect(await alice.evaluate(() => document.activeElement?.textContent)).toBe("Skip to content");
    await alice.setViewportSize({ width: 390, height: 844 });
    await screenshot(alice, "user-phone");

    await alice.goto(`${router.url}/console/owner`);
    await alice.getByText("The owner console is only for owner accounts").waitFor();

    // The owner sees the same calls in the descendants' usage.
    await owner.goto(`${router.url}/console/accounts#usage`);
    await owner.getByTestId("usage-by-account").locator("canvas").waitFor();
    await owner.getByRole("region", { name: "Usage by account" }).getByRole("row", { name: /alice-team/ }).waitFor();
    await screenshot(owner, "accounts-usage");
  }, 30_000);

  test("key rotation shows the new key once and the console keeps working with it", async () => {
    const alice = await freshPage();
    await signIn(alice, `${router.url}/console/#key`, aliceKey);
    await alice.waitForURL(/\/console\/#key$/);
    const confirm = (await alice.getByTestId("rotate-confirm").textContent())!;
    expect(confirm).toMatch(/^\d{4}-\d{2}-\d{2}-ROTATE-SELF$/);
    await alice.getByLabel("Confirmation").fill(confirm);
    await alice.getByRole("button", { name: "Rotate key" }).click();
    const fresh = await alice.getByLabel("Your new API key.").inputValue();
    secrets.push(fresh);
    expect(fresh).not.toBe(aliceKey);
    expect(await alice.evaluate(() => sessionStorage.getItem("router.console.key"))).toBe(fresh);
    expect((await router.fetch("/dashboard/status", { key: aliceKey })).status).toBe(401);
    await alice.goto(`${router.url}/console/#live`);
    await alice.getByTestId("live-today").waitFor();
  }, 30_000);

  test("a refused key returns to the login form; logging out clears the key", async () => {
    const page = await freshPage();
    await signIn(page, `${router.url}/console/#account`, secrets.at(-1)!);
    await page.getByText("Allowed API paths").waitFor();
    await page.getByRole("button", { name: "Log out" }).click();
    await page.getByLabel("API key").waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);

    await page.evaluate(() => sessionStorage.setItem("router.console.key", "sk-rt-not-a-valid-key-at-all-000000000000000"));
    await page.reload();
    await page.getByText(/The router refused the key \(401/).waitFor();
  }, 30_000);

  test("keys travel only in the Authorization header and live only in sessionStorage", async () => {
    expect(pageErrors).toEqual([]);
    const origin = new URL(router.url).origin;
    expect(seen.length).toBeGreaterThan(20);
    for (const request of seen) {
      for (const secret of secrets) expect(request.url).not.toContain(secret);
      for (const [name, value] of Object.entries(request.headers)) {
        if (name === "authorization") {
          expect(new URL(request.url).origin).toBe(origin);
          expect(value).toMatch(/^Bearer sk-rt-/);
        } else for (const secret of secrets) expect(value).not.toContain(secret);
      }
    }
    expect(seen.some((r) => r.headers.authorization === `Bearer ${router.ownerKey}`)).toBe(true);
    for (const context of contexts) {
      expect(await context.cookies()).toEqual([]);
      for (const page of context.pages()) {
        const storage = await page.evaluate(() => ({ local: JSON.stringify(localStorage), session: JSON.stringify(sessionStorage) }));
        for (const secret of secrets) expect(storage.local).not.toContain(secret);
      }
    }
    expect(await owner.evaluate(() => sessionStorage.getItem("router.console.key"))).toBe(router.ownerKey);
    for (const secret of secrets) expect(router.logs.join("\n")).not.toContain(secret);
  });
});
