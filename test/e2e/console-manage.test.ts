import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import type { Browser, Page } from "playwright-core";
import { launchChromium, recordedPage, screenshot, signIn, type SeenRequest } from "../helpers/browser.ts";
import { addKey } from "../helpers/keys.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";

// The console's other management paths in chromium: key types and deletion with its
// 409 explanation, notices, the operation log, mail settings, account edit and delete.
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

describe("console management paths", () => {
  test("a Vertex key from a pasted service-account file; deleting the last Level 1 key explains the 409 and forces", async () => {
    await page.getByRole("button", { name: "+ Add provider key" }).click();
    await keyForm().getByLabel("Provider type").selectOption("vertex");
    await keyForm().getByLabel("Base URL").fill("https://vertex.invalid");
    const secret = keyForm().getByLabel("Service-account key (JSON)");
    await secret.fill("{not json");
    await keyForm().getByText("Paste the service-account key file").waitFor();
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const file = { type: "service_account", project_id: "demo-project", client_email: "sa@demo-project.iam.gserviceaccount.com", private_key: privateKey.export({ type: "pkcs8", format: "pem" }) };
    await secret.fill(JSON.stringify(file));
    await keyForm().getByText("Client email: sa@demo-project.iam.gserviceaccount.com").waitFor();
    // The pasted key file is drawn as dots, as a password field's value.
    expect(await secret.evaluate((el) => getComputedStyle(el).getPropertyValue("-webkit-text-security"))).toBe("disc");
    await keyForm().getByLabel("Location").fill("us-central1");
    await keyForm().getByRole("button", { name: "Add key" }).click();
    await page.getByText("Key 1 added to Level 1.").waitFor();
    const stored = (await (await router.fetch("/x-keys/1")).json()) as Record<string, any>;
    // `formats` is shown filled with a Vertex key's default (issue 16).
    expect(stored.config).toEqual({ provider_type: "vertex", base_url: "https://vertex.invalid", location: "us-central1", formats: ["gemini", "anthropic", "openai"] });
    // The list names the key's type and its service account, not the tail of its file.
    const row = page.getByRole("row", { name: /Vertex AI/ });
    await row.getByText("sa@demo-project.iam.gserviceaccount.com").waitFor();

    await page.getByRole("button", { name: "Delete key 1" }).click();
    await page.getByRole("dialog", { name: "Delete key 1?" }).getByRole("button", { name: "Delete key" }).click();
    const force = page.getByRole("dialog", { name: "Delete key 1 anyway?" });
    await force.getByText("last enabled key of Level 1").waitFor();
    await force.getByRole("button", { name: "Delete anyway" }).click();
    await page.getByText("Key 1 deleted.").waitFor();
    await page.getByText("No provider keys match").waitFor();
    expect(seen.some((r) => r.method === "DELETE" && r.url.endsWith("/x-keys/1?force=true"))).toBe(true);
  }, 30_000);

  test("a notice is published, listed and deleted; the operation log shows both", async () => {
    await page.goto(`${router.url}/console/owner#notices`);
    await page.getByLabel("Title").fill("Maintenance tonight");
    await page.getByLabel("Content").fill("The router restarts at 22:00 UTC.");
    await page.getByRole("button", { name: "Publish notice" }).click();
    await page.getByText("Notice published to every account.").waitFor();
    const news = (await (await router.fetch("/dashboard/news")).json()) as { data: Array<{ title: string }> };
    expect(news.data.map((n) => n.title)).toEqual(["Maintenance tonight"]);
    await page.getByRole("button", { name: "Delete notice Maintenance tonight" }).click();
    await page.getByRole("dialog", { name: "Delete this notice?" }).getByRole("button", { name: "Delete notice" }).click();
    await page.getByText('Notice "Maintenance tonight" deleted.').waitFor();
    await page.getByText("No notices published yet.").waitFor();

    await page.goto(`${router.url}/console/owner#log`);
    await page.getByLabel("Action").fill("news.*");
    const log = page.getByRole("region", { name: "Operation log" });
    await log.getByText("key.create").waitFor({ state: "detached" });
    await log.getByText("news.delete").waitFor();
    await log.getByText("news.create").waitFor();
    // Who did it, by name; the details in words, not JSON.
    await log.getByRole("cell", { name: /owner@localhost/ }).first().waitFor();
    await log.getByText(/title Maintenance tonight/).first().waitFor();
    expect(await log.getByText(/\{"/).count()).toBe(0);
    await page.getByLabel("Target account ID").fill("x");
    await page.getByText("An account ID").waitFor();
    await screenshot(page, "owner-log");
  }, 30_000);

  test("mail settings save, the password stays masked, and a failing test mail shows the server's reason", async () => {
    await page.goto(`${router.url}/console/owner#system`);
    await page.getByLabel("Sender address (XAI_MAIL)").fill("router@example.com");
    await page.getByLabel("SMTP server (EMAIL_SMTP)").fill("127.0.0.1");
    await page.getByLabel("Port (EMAIL_PORT)").fill("99999");
    await page.getByText("A port from 1 to 65535").waitFor();
    await page.getByLabel("Port (EMAIL_PORT)").fill("1");
    await page.getByLabel("Password (EMAIL_PASS)").fill("smtp-secret-password");
    await page.getByRole("button", { name: "Save mail settings" }).click();
    await page.getByText("Saved XAI_MAIL, EMAIL_SMTP, EMAIL_PORT, EMAIL_PASS.").waitFor();
    expect(await page.getByLabel("Password (EMAIL_PASS)").inputValue()).toBe("********");
    await page.getByRole("button", { name: "Send test mail" }).click();
    await page.getByText(/The router could not do it:.*Sending the test mail failed/).waitFor();
    expect(await page.getByText(/Error \d{3}|\(field /).count()).toBe(0);
    for (const request of seen) expect(request.url).not.toContain("smtp-secret-password");
  }, 30_000);

  test("an account is created with defaults, edited and deleted", async () => {
    await page.goto(`${router.url}/console/accounts`);
    await page.getByRole("button", { name: "+ Create account" }).click();
    const form = page.locator('form[aria-labelledby="acct-form-h"]');
    await form.getByLabel("Email").first().fill("bob@example.com");
    await form.getByLabel("Requests per minute (RPM)").fill("1.5");
    await form.getByText("Enter a whole number").waitFor();
    await form.getByLabel("Requests per minute (RPM)").fill("");
    await form.getByRole("button", { name: "Create account" }).click();
    await page.getByLabel("The new account's API key.").waitFor();
    await page.getByRole("button", { name: "Done" }).click();
    expect(await page.getByLabel("The new account's API key.").count()).toBe(0);

    await page.getByRole("button", { name: /^Edit bob/ }).click();
    await form.getByLabel("Alias").fill("Bob's team");
    await form.getByLabel("Allowed models").fill("gpt 4");
    await form.getByRole("button", { name: "Save account" }).click();
    await form.getByText("Fix the fields marked above.").waitFor();
    await form.getByLabel("Allowed models").fill("gpt-4o*");
    await form.getByRole("button", { name: "Save account" }).click();
    await page.getByText(/Account bob.* saved\./).waitFor();
    const bob = (await (await router.fetch("/x-users/bob@example.com")).json()) as Record<string, any>;
    expect(bob).toMatchObject({ Alias: "Bob's team", AllowModels: "gpt-4o*" });

    await page.getByRole("button", { name: /^Delete bob/ }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete account" }).click();
    await page.getByText(/deleted; 0\.0000 credits returned/).waitFor();
    await page.getByText("No accounts yet.").waitFor();
    expect(errors).toEqual([]);
  }, 30_000);
});

describe("the key Edit form and the secret", () => {
  test("opening a key's Edit form reads the record without SecretKey (fields=edit): the opened secret never travels to the browser, and the form works as before", async () => {
    const SECRET = "sk-console-edit-0123456789abcdefghijklmnop";
    // A key made elsewhere (CLI, API): the console never had its secret.
    const { id } = await addKey(router, { provider: "https://api.example.com/v1", secret: SECRET, name: "cli-made" });
    // A page of its own: the responses it receives are what this test looks at.
    const ownSeen: SeenRequest[] = [];
    const ownErrors: string[] = [];
    const { context, page: own } = await recordedPage(browser, ownSeen, ownErrors);
    try {
      const bodies: Array<{ url: string; text: string }> = [];
      own.on("response", (response) => {
        if (response.url().includes("/x-keys")) void response.text().then((text) => bodies.push({ url: response.url(), text }), () => {});
      });
      await signIn(own, `${router.url}/console/`, router.ownerKey);
      await own.waitForURL(/\/console\/owner$/);
      await own.getByRole("button", { name: `Edit key ${id} (cli-made)` }).click();
      const form = own.locator('form[aria-labelledby="key-form-h"]');
      await form.waitFor();
      // The secret field of the form is empty: the console has no use for the secret.
      expect(await form.getByLabel("Secret key").inputValue()).toBe("");
      // The form shows what it showed before: the stored tail and the key's settings.
      await form.getByText(`Stored: …${SECRET.slice(-20)}.`).waitFor();
      expect(await form.getByLabel("Provider URL").inputValue()).toBe("https://api.example.com/v1");
      expect(await form.getByLabel("Name").inputValue()).toBe("cli-made");
      await Bun.sleep(200);
      expect(bodies.length).toBeGreaterThan(0);
      // Neither the list (fields=overview) nor the edit's read carries the secret.
      expect(bodies.filter((b) => b.text.includes(SECRET)).map((b) => b.url.replace(router.url, ""))).toEqual([]);
      expect(ownSeen.some((r) => r.method === "GET" && r.url.endsWith(`/x-keys/${id}?fields=edit`))).toBe(true);

      // Saving a change sends no SecretKey: the key keeps its secret.
      await form.getByLabel("Level").fill("3");
      await form.getByRole("button", { name: "Save key" }).click();
      await own.getByText(`Key ${id} saved.`).waitFor();
      const stored = (await (await router.fetch(`/x-keys/${id}`)).json()) as Record<string, any>;
      expect(stored).toMatchObject({ Level: 3, Name: "cli-made", SecretKey: SECRET });
      // A key action's answer does not bring it either (writes are answered in the form asked for).
      await own.getByRole("button", { name: `Sleep key ${id} (cli-made)` }).click();
      await own.getByText(`Key ${id} put to sleep.`).waitFor();
      await Bun.sleep(200);
      expect(ownSeen.some((r) => r.method === "PUT" && r.url.endsWith(`/x-keys/${id}?fields=edit`))).toBe(true);
      expect(bodies.filter((b) => b.text.includes(SECRET)).map((b) => b.url.replace(router.url, ""))).toEqual([]);
      expect(ownErrors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 30_000);
});
