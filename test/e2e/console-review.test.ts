import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { launchChromium, recordedPage, signIn, type SeenRequest } from "../helpers/browser.ts";
import { addKey } from "../helpers/keys.ts";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { api, chatRequestId } from "../helpers/owner-ops.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";

// A review of the console as an owner, a manager and a user use it: each test here
// failed before the change it guards.
let router: TestRouter;
let upstream: MockUpstream;
let browser: Browser;
const seen: SeenRequest[] = [];
const errors: string[] = [];

/** One chat call as `key` (the owner's by default). */
const call = (model: string, key = router.ownerKey) => chatRequestId(router, key, model);

beforeAll(async () => {
  router = await startRouter();
  upstream = startMockUpstream().route("POST", "/v1/chat/completions", (request) =>
    json({
      id: "chatcmpl-1",
      object: "chat.completion",
      created: 1,
      model: (request.json as { model: string }).model,
      choices: [{ index: 0, message: { role: "assistant", content: "hello" }, finish_reason: "stop" }],
      usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
    }),
  );
  await addKey(router, { provider: `${upstream.url}/v1`, name: "review-key", noSleep: true });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await upstream?.stop();
  await router?.stop();
});

async function owner(): Promise<{ page: Page; close: () => Promise<void> }> {
  const { context, page } = await recordedPage(browser, seen, errors);
  await signIn(page, `${router.url}/console/`, router.ownerKey);
  await page.waitForURL(/\/console\/owner$/);
  return { page, close: () => context.close() };
}

describe("the requests page's live tail", () => {
  test("on a later page it counts only calls made since, not the first page's calls", async () => {
    for (let i = 0; i < 22; i++) await call(`tail-${i}`);
    await router.deps.usageRecorder.flush();
    const { page, close } = await owner();
    await page.goto(`${router.url}/console/requests`);
    const calls = page.getByRole("region", { name: "Model calls" });
    await calls.locator("tbody tr").first().waitFor();
    await page.getByRole("navigation", { name: "Model calls pages" }).getByRole("button", { name: "Next →" }).click();
    await page.getByText(/^Page 2 of 2/).waitFor();
    await page.getByLabel(/^Live tail/).check();
    // Two polls with nothing new: no count.
    await page.waitForTimeout(3500);
    expect(await page.getByText(/new calls? since this page was opened/).count()).toBe(0);
    await call("tail-new");
    await router.deps.usageRecorder.flush();
    await page.getByText("1 new call since this page was opened.").waitFor({ timeout: 10_000 });
    await close();
  }, 40_000);
});

describe("account emails", () => {
  test("the form takes an address the router takes (a host without a dot) and says what the router refuses", async () => {
    const { page, close } = await owner();
    await page.goto(`${router.url}/console/accounts`);
    await page.getByRole("button", { name: "+ Create account" }).click();
    const form = page.locator('form[aria-labelledby="acct-form-h"]');
    await form.getByRole("textbox", { name: "Email", exact: true }).fill("ann@intranet");
    await form.getByRole("textbox", { name: "Name", exact: true }).fill("Ann Lee 李");
    expect(await form.getByText("Not a valid email address").count()).toBe(0);
    // What the router refuses is said before anything is sent.
    await form.getByRole("textbox", { name: "Billing email" }).fill("ann@exa_mple.com");
    await form.getByText("Not a valid email address").waitFor();
    await form.getByRole("textbox", { name: "Billing email" }).fill("");
    await form.getByRole("button", { name: "Create account" }).click();
    await page.getByText(/^Account Ann Lee 李 \(ID \d+\) created\.$/).waitFor();
    const created = await api(router, "/x-users?email=ann@intranet");
    expect(created.body.map((a: { Name: string }) => a.Name)).toEqual(["Ann Lee 李"]);
    await close();
  }, 30_000);
});

describe("lists after a delete", () => {
  test("deleting the only notice of the last page shows the page before, not 'No notices published yet'", async () => {
    for (let i = 0; i < 21; i++) expect((await api(router, "/x-news", { body: { title: `paged ${i}`, content: "c" } })).status).toBe(201);
    const { page, close } = await owner();
    await page.goto(`${router.url}/console/owner#notices`);
    const pager = page.getByRole("navigation", { name: "Notices pages" });
    await pager.getByRole("button", { name: "Next →" }).click();
    await page.getByRole("button", { name: "Delete notice paged 0" }).click();
    await page.getByRole("dialog", { name: "Delete this notice?" }).getByRole("button", { name: "Delete notice" }).click();
    await page.getByText('Notice "paged 0" deleted.').waitFor();
    await pager.getByText("Page 1 of 1 (20 in all)").waitFor({ timeout: 5000 });
    expect(await page.getByText("No notices published yet.").count()).toBe(0);
    expect(await page.getByRole("button", { name: "Delete notice paged 20" }).count()).toBe(1);
    for (const notice of (await api(router, "/x-news?size=100")).body) await api(router, `/x-news/${notice.id}`, { method: "DELETE" });
    await close();
  }, 30_000);

  test("after a confirmed delete, focus stays in the part of the page the row was in (not lost to <body>)", async () => {
    await api(router, "/x-news", { body: { title: "gone", content: "c" } });
    await api(router, "/x-news", { body: { title: "kept", content: "c" } });
    const { page, close } = await owner();
    await page.goto(`${router.url}/console/owner#notices`);
    await page.getByRole("button", { name: "Delete notice gone" }).click();
    await page.getByRole("dialog", { name: "Delete this notice?" }).getByRole("button", { name: "Delete notice" }).click();
    await page.getByText('Notice "gone" deleted.').waitFor();
    await page.getByRole("button", { name: "Delete notice gone" }).waitFor({ state: "detached" });
    await page.waitForFunction(() => document.activeElement !== document.body, undefined, { timeout: 3000 }).catch(() => {});
    expect(await page.evaluate(() => document.activeElement?.tagName)).not.toBe("BODY");
    for (const notice of (await api(router, "/x-news?size=100")).body) await api(router, `/x-news/${notice.id}`, { method: "DELETE" });
    await close();
  }, 30_000);
});

describe("sections", () => {
  test("a section named in the address while the page was mounting is shown, not the first section", async () => {
    const context = await browser.newContext();
    // The address names #notices after the page's first render but before it listens
    // for hash changes: what a link followed (or a test's goto) during mounting does.
    await context.addInitScript(() => {
      const listen = window.addEventListener.bind(window);
      window.addEventListener = ((type: string, listener: EventListenerOrEventListenerObject, options?: boolean | AddEventListenerOptions) => {
        if (type === "hashchange" && location.pathname.endsWith("/owner") && location.hash === "") history.replaceState(null, "", "#notices");
        listen(type, listener, options);
      }) as typeof window.addEventListener;
    });
    const page = await context.newPage();
    await signIn(page, `${router.url}/console/`, router.ownerKey);
    await page.waitForURL(/\/console\/owner#notices$/);
    await page.getByRole("heading", { level: 2, name: "Notices" }).waitFor({ timeout: 5000 });
    expect(await page.locator("nav.tabs a[aria-current='true']").textContent()).toBe("Notices");
    await context.close();
  }, 30_000);
});

describe("times", () => {
  test("are shown in the router's business zone, named, not in the browser's", async () => {
    const tokyo = await startRouter({ config: { timeZone: "Asia/Tokyo" } });
    try {
      const notice = await api(tokyo, "/x-news", { body: { title: "zoned", content: "c" } });
      expect(notice.status).toBe(201);
      const status = await api(tokyo, "/dashboard/status");
      expect(status.body.timeZone).toBe("Asia/Tokyo");
      const context = await browser.newContext({ timezoneId: "America/Los_Angeles" });
      const page = await context.newPage();
      await signIn(page, `${tokyo.url}/console/`, tokyo.ownerKey);
      await page.waitForURL(/\/console\/owner$/);
      await page.goto(`${tokyo.url}/console/owner#notices`);
      const row = page.getByRole("row", { name: /zoned/ });
      await row.waitFor();
      const shown = await row.locator("td[data-label='Published']").textContent();
      const spaces = (text: string) => text.replace(/\s/g, " ");
      const expected = new Date(notice.body.created_at).toLocaleString("en-US", { year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "2-digit", second: "2-digit", timeZone: "Asia/Tokyo", timeZoneName: "short" });
      expect(spaces(shown ?? "")).toBe(spaces(expected));
      expect(shown).toContain("GMT+9");
      await context.close();
    } finally {
      await tokyo.stop();
    }
  }, 30_000);
});
