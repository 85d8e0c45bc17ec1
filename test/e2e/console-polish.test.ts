import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { launchChromium, recordedPage, signIn, type SeenRequest } from "../helpers/browser.ts";
import { recordUsage } from "../helpers/keys.ts";
import { createAccount } from "../helpers/owner-ops.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";

// Issue 18 (console): a dark theme that follows prefers-color-scheme with a remembered
// toggle; the 403 page keeps the header and Log out; money figures with fixed decimals
// and a unit; tables that sort by their headers.
let router: TestRouter;
let browser: Browser;
const seen: SeenRequest[] = [];
const errors: string[] = [];

beforeAll(async () => {
  router = await startRouter();
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await router?.stop();
});

/** The page's background colour, as the browser computed it. */
const background = (page: import("playwright-core").Page) => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
const isDark = (rgb: string) => {
  const [r, g, b] = (rgb.match(/\d+/g) ?? []).map(Number);
  return (r! + g! + b!) / 3 < 80;
};

describe("console theme", () => {
  test("follows the system's dark setting; the toggle overrides it and is remembered", async () => {
    const { context, page } = await recordedPage(browser, seen, errors);
    await page.emulateMedia({ colorScheme: "dark" });
    await signIn(page, `${router.url}/console/`, router.ownerKey);
    await page.waitForURL(/\/console\/owner$/);
    expect(isDark(await background(page))).toBe(true);

    const toggle = page.getByRole("button", { name: /^Theme:/ });
    await expect(toggle.textContent()).resolves.toBe("Theme: auto");
    await toggle.click(); // dark
    await toggle.click(); // light: overrides the system's dark
    await expect(toggle.textContent()).resolves.toBe("Theme: light");
    expect(isDark(await background(page))).toBe(false);
    await page.reload();
    await page.waitForSelector("header.top");
    expect(isDark(await background(page))).toBe(false);
    expect(await page.getByRole("button", { name: /^Theme:/ }).textContent()).toBe("Theme: light");

    await page.emulateMedia({ colorScheme: "light" });
    await page.getByRole("button", { name: /^Theme:/ }).click(); // auto again: light here
    expect(await page.getByRole("button", { name: /^Theme:/ }).textContent()).toBe("Theme: auto");
    expect(isDark(await background(page))).toBe(false);
    // In auto the page follows the system when it changes.
    await page.emulateMedia({ colorScheme: "dark" });
    await page.waitForFunction(() => document.documentElement.dataset.theme === "dark");
    await page.emulateMedia({ colorScheme: "light" });
    await page.waitForFunction(() => document.documentElement.dataset.theme === "light");
    await page.getByRole("button", { name: /^Theme:/ }).click(); // dark, whatever the system says
    expect(isDark(await background(page))).toBe(true);
    expect(errors).toEqual([]);
    await context.close();
  });
});

describe("the 403 page", () => {
  test("keeps the header with the pages the key may use and Log out", async () => {
    const plain = await createAccount(router, { CreditGranted: 1 });
    const { context, page } = await recordedPage(browser, seen, errors);
    await signIn(page, `${router.url}/console/`, plain.key);
    await page.waitForSelector("header.top");
    await page.goto(`${router.url}/console/owner`);
    await page.getByRole("heading", { name: "Not available for this key" }).waitFor();
    const header = page.locator("header.top");
    expect(await header.isVisible()).toBe(true);
    expect(await header.getByRole("link", { name: "Router" }).isVisible()).toBe(true);
    await page.getByRole("button", { name: "Log out" }).click();
    await page.getByLabel("API key").waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await context.close();
  });
});

describe("money figures", () => {
  test("the balance has a unit and fixed decimals; an owner's balance below zero is explained", async () => {
    await recordUsage(router, { accountId: 1, costNanos: 1_500_000_000 });
    const { context, page } = await recordedPage(browser, seen, errors);
    await signIn(page, `${router.url}/console/`, router.ownerKey);
    await page.waitForURL(/\/console\/owner$/);
    await page.goto(`${router.url}/console/#account`);
    await page.getByText("-1.5000 credits").waitFor();
    await page.getByText(/owners are never refused for balance/).waitFor();
    await context.close();
  });
});

describe("tables", () => {
  test("a column sorts by clicking its header, the other way on a second click; aria-sort says which", async () => {
    const { api } = await import("../helpers/owner-ops.ts");
    for (const [level, name] of [[3, "charlie"], [1, "alpha"], [2, "bravo"]] as const) {
      const res = await api(router, "/x-keys", { body: { Provider: `https://10.0.0.${level}/v1`, SecretKey: `sk-sort-${name}-0123456789abcdef`, Level: level, Status: true, Name: name } });
      expect(res.status).toBe(201);
    }
    const { context, page } = await recordedPage(browser, seen, errors);
    await signIn(page, `${router.url}/console/`, router.ownerKey);
    await page.waitForURL(/\/console\/owner$/);
    const table = page.getByRole("region", { name: "Provider keys" });
    await table.waitFor();
    const names = () => table.locator("tbody tr td[data-label='Name']").allTextContents();
    const header = table.getByRole("columnheader", { name: "Level" });
    expect(await header.getAttribute("aria-sort")).toBe("none");
    await header.getByRole("button").click();
    expect(await header.getAttribute("aria-sort")).toBe("ascending");
    expect(await names()).toEqual(["alpha", "bravo", "charlie"]);
    await header.getByRole("button").click();
    expect(await header.getAttribute("aria-sort")).toBe("descending");
    expect(await names()).toEqual(["charlie", "bravo", "alpha"]);
    await table.getByRole("columnheader", { name: "Name" }).getByRole("button").click();
    expect(await names()).toEqual(["alpha", "bravo", "charlie"]);
    // The actions column does not sort.
    expect(await table.getByRole("columnheader", { name: "Actions" }).getAttribute("aria-sort")).toBeNull();
    await context.close();
  });
});

describe("errors in words, next to their field", () => {
  test("a Provider URL the server refuses shows its reason under that field, with no status code", async () => {
    const { context, page } = await recordedPage(browser, seen, errors);
    await signIn(page, `${router.url}/console/`, router.ownerKey);
    await page.waitForURL(/\/console\/owner$/);
    await page.getByRole("button", { name: "+ Add provider key" }).click();
    const form = page.locator('form[aria-labelledby="key-form-h"]');
    await form.getByLabel("Provider URL").fill("https://169.254.169.254/v1");
    await form.getByLabel("Secret key").fill("sk-refused-address-0123456789abcdef");
    await form.getByLabel(/^Level/).fill("1");
    await form.getByRole("button", { name: "Add key" }).click();
    const field = form.locator(".field", { has: page.getByLabel("Provider URL") });
    await field.getByText(/metadata/).waitFor();
    // Only the field's own message: no note repeating it above the buttons.
    expect(await form.locator(".note.error").count()).toBe(0);
    expect(await form.getByRole("alert").count()).toBe(1);
    expect(await page.getByText(/Error \d{3}|\(field /).count()).toBe(0);
    await context.close();
  });
});

describe("forms speak when there is something to say", () => {
  test("'Required' waits for the field to be touched or the form tried; Save waits for a change (accounts, MODEL_LIMITS)", async () => {
    const { context, page } = await recordedPage(browser, seen, errors);
    await signIn(page, `${router.url}/console/`, router.ownerKey);
    await page.waitForURL(/\/console\/owner$/);
    await page.goto(`${router.url}/console/accounts`);
    await page.getByRole("button", { name: "+ Create account" }).click();
    const form = page.locator('form[aria-labelledby="acct-form-h"]');
    const email = page.getByLabel(/^Email/);
    const emailField = form.locator(".field", { has: page.getByLabel(/^Email/) });
    await email.waitFor();
    expect(await emailField.getByText("Required").count()).toBe(0);
    // Trying to create shows what is missing.
    await form.getByRole("button", { name: "Create account" }).click();
    await emailField.getByText("Required").waitFor();
    // A value is judged as it is typed.
    await email.fill("not-an-address");
    await emailField.getByText("Not a valid email address").waitFor();
    await email.fill("carol@example.com");
    await form.getByRole("button", { name: "Create account" }).click();
    await page.getByRole("button", { name: "Done" }).click();

    await page.getByRole("button", { name: /^Edit carol/ }).click();
    const save = form.getByRole("button", { name: "Save account" });
    expect(await save.isDisabled()).toBe(true);
    await form.getByLabel("Alias").fill("Carol");
    expect(await save.isDisabled()).toBe(false);
    await form.getByLabel("Alias").fill("");
    expect(await save.isDisabled()).toBe(true);
    await form.getByRole("button", { name: "Cancel" }).click();

    await page.goto(`${router.url}/console/owner#system`);
    const limits = page.locator("section", { has: page.getByRole("heading", { name: /Model limits/ }) });
    const saveLimits = limits.getByRole("button", { name: "Save MODEL_LIMITS" });
    await saveLimits.waitFor();
    expect(await saveLimits.isDisabled()).toBe(true);
    await limits.getByRole("button", { name: /Add/ }).first().click();
    // A row added and left empty is no change yet.
    expect(await saveLimits.isDisabled()).toBe(true);
    await context.close();
  }, 30_000);
});

describe("wide tables on a phone", () => {
  test("at 390 px the keys table keeps the columns that matter, the rest open under a row's More, and nothing scrolls sideways", async () => {
    const { api } = await import("../helpers/owner-ops.ts");
    const created = await api(router, "/x-keys", { body: { Provider: "https://10.9.9.9/v1", SecretKey: "sk-phone-0123456789abcdef-wide", Level: 7, Status: true, Name: "phone-key" } });
    expect(created.status).toBe(201);
    const { context, page } = await recordedPage(browser, seen, errors);
    await page.setViewportSize({ width: 390, height: 844 });
    await signIn(page, `${router.url}/console/`, router.ownerKey);
    await page.waitForURL(/\/console\/owner$/);
    const table = page.getByRole("region", { name: "Provider keys" });
    const row = table.getByRole("row", { name: /phone-key/ });
    await row.waitFor();
    // The provider URL is a detail: out of the row until asked for.
    expect(await row.getByText("https://10.9.9.9/v1").isVisible()).toBe(false);
    const more = row.getByRole("button", { name: /^More about row/ });
    expect(await more.getAttribute("aria-expanded")).toBe("false");
    await more.click();
    expect(await more.getAttribute("aria-expanded")).toBe("true");
    await table.locator("tr.row-detail").getByText("https://10.9.9.9/v1").waitFor();
    // The table fits the screen: no sideways scrolling to reach Status or Actions.
    expect(await table.evaluate((el) => el.scrollWidth <= el.clientWidth + 1)).toBe(true);
    // On a wide screen every column is in the row and there is no More button.
    await page.setViewportSize({ width: 1280, height: 800 });
    expect(await row.getByText("https://10.9.9.9/v1").isVisible()).toBe(true);
    expect(await more.isVisible()).toBe(false);
    await context.close();
  }, 30_000);
});

describe("server refusals under their field", () => {
  test("an account email already in use is refused under the Email field, in words, and not repeated above the buttons", async () => {
    const { createAccount } = await import("../helpers/owner-ops.ts");
    await createAccount(router, { Email: "taken@example.com" });
    const { context, page } = await recordedPage(browser, seen, errors);
    await signIn(page, `${router.url}/console/`, router.ownerKey);
    await page.waitForURL(/\/console\/owner$/);
    await page.goto(`${router.url}/console/accounts`);
    await page.getByRole("button", { name: "+ Create account" }).click();
    const form = page.locator('form[aria-labelledby="acct-form-h"]');
    await page.getByLabel(/^Email/).fill("taken@example.com");
    await form.getByRole("button", { name: "Create account" }).click();
    const field = form.locator(".field", { has: page.getByLabel(/^Email/) });
    await field.locator(".error-text").waitFor();
    expect(await field.locator(".error-text").textContent()).toMatch(/taken@example\.com|already/i);
    expect(await form.locator(".note.error").count()).toBe(0);
    expect(await page.getByText(/Error \d{3}|\(field /).count()).toBe(0);
    await context.close();
  }, 30_000);
});
