import { afterAll, beforeAll, expect, test } from "bun:test";
import { startRouter, type TestRouter } from "../helpers/router.ts";

let router: TestRouter;
beforeAll(async () => {
  router = await startRouter({ pricing: false });
});
afterAll(() => router.stop());

const put = (body: unknown) => router.fetch("/x-config", { method: "PUT", body: JSON.stringify(body) });

test("mail items are validated on write, each refusal naming the item", async () => {
  const bad: Array<[string, unknown]> = [
    ["XAI_MAIL", "not an address"],
    ["XAI_MAIL", 42],
    ["EMAIL_SMTP", "smtp host with spaces"],
    ["EMAIL_PORT", 0],
    ["EMAIL_PORT", 70000],
    ["EMAIL_PORT", "25a"],
    ["EMAIL_AUTH", { user: "x" }],
    ["EMAIL_PASS", 12345],
  ];
  for (const [item, value] of bad) {
    const res = await put({ [item]: value });
    expect(res.status).toBe(400);
    expect((await res.json()).error.param).toBe(item);
  }
  expect((await (await router.fetch("/x-config")).json()).configs).toEqual({});
});

test("valid mail items are stored, the port as a number, the password masked and sealed", async () => {
  const res = await put({ XAI_MAIL: "router@example.com", EMAIL_SMTP: "smtp.example.com", EMAIL_PORT: "587", EMAIL_AUTH: "mailer", EMAIL_PASS: "pa55-word-secret" });
  expect(res.status).toBe(200);
  expect((await res.json()).configs).toEqual({
    XAI_MAIL: "router@example.com",
    EMAIL_SMTP: "smtp.example.com",
    EMAIL_PORT: 587,
    EMAIL_AUTH: "mailer",
    EMAIL_PASS: "********",
  });
  expect(router.deps.settings.raw("EMAIL_PASS")).toBe("pa55-word-secret");
  const stored = (await router.deps.store.settings.all(0)).find((row) => row.key === "EMAIL_PASS")!.value;
  expect(stored).not.toContain("pa55-word-secret");
});
