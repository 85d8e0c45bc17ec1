import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { launchChromium, recordedPage, signIn, type SeenRequest } from "../helpers/browser.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";

// Issue 16: the key form shows config.formats as checkboxes; none checked leaves the default.
let router: TestRouter;
let browser: Browser;
let page: Page;
const seen: SeenRequest[] = [];
const errors: string[] = [];

beforeAll(async () => {
  router = await startRouter();
  browser = await launchChromium();
  page = (await recordedPage(browser, seen, errors)).page;
  await signIn(page, `${router.url}/console/`, router.ownerKey);
  await page.waitForURL(/\/console\/owner$/);
});

afterAll(async () => {
  await browser?.close();
  await router?.stop();
});

const keyForm = () => page.locator('form[aria-labelledby="key-form-h"]');

test("a key added with one format checked speaks that format; one with none checked gets the default", async () => {
  await page.getByRole("button", { name: "+ Add provider key" }).click();
  await keyForm().getByLabel("Provider URL").fill("https://llm.invalid/v1");
  await keyForm().getByLabel("Secret key").fill("sk-test-formats-0123456789abcdef");
  await keyForm().getByLabel("Anthropic Messages").check();
  await keyForm().getByRole("button", { name: "Add key" }).click();
  await page.getByText("Key 1 added to Level 1.").waitFor();
  expect((await (await router.fetch("/x-keys/1")).json()).config.formats).toEqual(["anthropic"]);

  await page.getByRole("button", { name: "+ Add provider key" }).click();
  await keyForm().getByLabel("Provider URL").fill("https://api.anthropic.com");
  await keyForm().getByLabel("Secret key").fill("sk-test-formats-abcdef0123456789");
  await keyForm().getByRole("button", { name: "Add key" }).click();
  await page.getByText("Key 2 added to Level 1.").waitFor();
  const stored = await router.deps.providerKeys.all();
  expect(JSON.parse(stored.find((row) => row.id === 2)!.config).formats).toBeUndefined();
  expect((await (await router.fetch("/x-keys/2")).json()).config.formats).toEqual(["anthropic"]);
  expect(errors).toEqual([]);
});
