import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page, Route } from "playwright-core";
import { healthBadge, healthState, type KeyHealth } from "../../console/src/owner/key-health.ts";
import { launchChromium, recordedPage, screenshot, signIn, type SeenRequest } from "../helpers/browser.ts";
import { addKey } from "../helpers/keys.ts";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { createAccount } from "../helpers/owner-ops.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";

// Issue 17 (owner console): the keys table's health columns, badge and Test button; the
// Route explain box on the routing tab; names in the operation log.
let router: TestRouter;
let upstream: MockUpstream;
let refusing: MockUpstream;
let browser: Browser;
let page: Page;
let good: { id: number };
let bad: { id: number };
const seen: SeenRequest[] = [];
const errors: string[] = [];

const HEALTHY: KeyHealth = { Today: { Requests: 12, Errors: 1, Spend: 0.25, AvgLatencyMs: 840 }, LastError: { At: "2026-01-01T10:00:00Z", Status: 500, Message: "upstream exploded at 10:00" }, LastSuccessAt: "2026-01-01T10:05:00Z" };
const FAILING: KeyHealth = { Today: { Requests: 3, Errors: 3, Spend: 0, AvgLatencyMs: 120 }, LastError: { At: "2026-01-01T11:00:00Z", Status: 401, Message: "invalid api key" }, LastSuccessAt: null };

beforeAll(async () => {
  upstream = startMockUpstream().route("GET", "/v1/models", () => json({ object: "list", data: [{ id: "m1" }] }));
  refusing = startMockUpstream().route("GET", "/v1/models", () => json({ error: { message: "bad key" } }, 401));
  router = await startRouter();
  good = await addKey(router, { provider: `${upstream.url}/v1`, name: "good-key", level: 2 });
  bad = await addKey(router, { provider: `${refusing.url}/v1`, name: "refused-key", level: 2 });
  await router.deps.settings.update({ MODEL_MAPPER: "alias*=real-model", LEVEL_MAPPER: "real-*=2" });
  browser = await launchChromium();
  page = (await recordedPage(browser, seen, errors)).page;
  await signIn(page, `${router.url}/console/`, router.ownerKey);
  await page.waitForURL(/\/console\/owner$/);
});

afterAll(async () => {
  await browser?.close();
  await upstream?.stop();
  await refusing?.stop();
  await router?.stop();
});

/** Answers the keys list with `Health` set per key ID (undefined: removed, as an older server answers). */
async function withHealth(byId: Record<number, KeyHealth | undefined>): Promise<void> {
  await page.unroute("**/x-keys?*");
  await page.route("**/x-keys?*", async (route: Route) => {
    const response = await route.fetch();
    const rows = (await response.json()) as Array<Record<string, unknown>>;
    const changed = rows.map(({ Health: _drop, ...row }) => (byId[row.ID as number] ? { ...row, Health: byId[row.ID as number] } : row));
    await route.fulfill({ response, json: changed });
  });
}

const keysTable = () => page.getByRole("region", { name: "Provider keys" });
const keyRow = (name: string) => keysTable().getByRole("row", { name: new RegExp(name) });

describe("the health badge's rule", () => {
  test("disabled, asleep, failing, unused, healthy, unknown", () => {
    const awake = { Status: true, Sleeping: false };
    expect(healthState({ ...awake, Status: false, Health: HEALTHY })).toBe("disabled");
    expect(healthBadge({ ...awake, Sleeping: true, SleepReason: "auth", Health: HEALTHY }).label).toBe("Asleep (auth)");
    expect(healthState({ ...awake, Health: FAILING })).toBe("failing");
    // An error after the last success is failing, however few.
    expect(healthState({ ...awake, Health: { ...HEALTHY, LastSuccessAt: "2026-01-01T09:00:00Z" } })).toBe("failing");
    // Half or more of today's calls failed.
    expect(healthState({ ...awake, Health: { ...HEALTHY, Today: { ...HEALTHY.Today, Errors: 6 } } })).toBe("failing");
    expect(healthState({ ...awake, Health: { Today: { Requests: 0, Errors: 0, Spend: 0, AvgLatencyMs: null }, LastError: null, LastSuccessAt: null } })).toBe("unused");
    expect(healthState({ ...awake, Health: HEALTHY })).toBe("healthy");
    expect(healthBadge(awake)).toEqual({ label: "Enabled", kind: "on" });
  });
});

describe("owner console", () => {
  test("the keys table shows each key's health figures and badge, and the last error's message on demand", async () => {
    await withHealth({ [good.id]: HEALTHY, [bad.id]: FAILING });
    await page.reload();
    await keyRow("good-key").waitFor();
    expect(await keyRow("good-key").getByText("Healthy").isVisible()).toBe(true);
    const row = await keyRow("good-key").textContent();
    expect(row).toContain("12");
    expect(row).toContain("0.2500");
    expect(row).toContain("840 ms");
    expect(row).toContain("status 500");
    await keyRow("good-key").getByText("Message").click();
    expect(await keyRow("good-key").getByText("upstream exploded at 10:00").isVisible()).toBe(true);
    expect(await keyRow("refused-key").getByText("Failing").isVisible()).toBe(true);
    await screenshot(page, "keys-health");

    // An older router sends no Health: the badge says what is known, the figures a dash.
    await withHealth({});
    await page.reload();
    await keyRow("good-key").waitFor();
    expect(await keyRow("good-key").getByText("Enabled").first().isVisible()).toBe(true);
    await page.unroute("**/x-keys?*");
  }, 30_000);

  test("Test calls POST /x-keys/{id}/test and shows the outcome in the row", async () => {
    await page.goto(`${router.url}/console/owner#keys`);
    await keyRow("good-key").waitFor();
    await page.getByRole("button", { name: `Test key ${good.id} (good-key)` }).click();
    const okLine = page.getByTestId(`key-test-${good.id}`);
    await okLine.getByText(/^OK \(200\)/).waitFor();
    await page.getByRole("button", { name: `Test key ${bad.id} (refused-key)` }).click();
    const failed = page.getByTestId(`key-test-${bad.id}`);
    await failed.getByText(/^Failed \(401\)/).waitFor();
    expect(seen.some((r) => r.method === "POST" && r.url.endsWith(`/x-keys/${bad.id}/test`))).toBe(true);
    expect(errors).toEqual([]);
  }, 30_000);

  test("Route explain shows the mapper steps, the Level, the key that would take the call, and a refusing rule", async () => {
    await page.goto(`${router.url}/console/owner#routing`);
    const box = page.getByTestId("route-explain");
    await box.getByLabel(/^Model/).fill("alias-x");
    await box.getByRole("button", { name: "Explain" }).click();
    await box.getByText("alias-x matches alias* → real-model").waitFor();
    expect(await box.getByText("real-* → Level 2").isVisible()).toBe(true);
    const keys = box.getByRole("region", { name: "Candidate keys of Level 2" });
    expect(await keys.getByRole("row", { name: /This one/ }).count()).toBe(1);
    expect(await keys.textContent()).toContain("good-key");

    const limited = await createAccount(router, { CreditGranted: 1, AllowModels: "other-*" });
    await box.getByLabel("Account (optional)").fill(String(limited.id));
    await box.getByRole("button", { name: "Explain" }).click();
    await box.getByText(/refused by/).waitFor();
    expect(await box.getByText("AllowModels").isVisible()).toBe(true);
    await screenshot(page, "route-explain");
    expect(errors).toEqual([]);
  }, 30_000);

  test("the operation log names the operator, the key a key action was about, and the system", async () => {
    expect((await router.fetch(`/x-keys/${good.id}/sleep`, { method: "POST" })).status).toBe(200);
    await router.deps.oplog.write({ tenantId: router.deps.tenantId, actorId: null, action: "key.auto_wake", details: { key: good.id, level: 2 } });
    await page.goto(`${router.url}/console/owner#log`);
    const log = page.getByRole("region", { name: "Operation log" });
    const sleep = log.getByRole("row", { name: /key\.sleep/ });
    await sleep.waitFor();
    expect(await sleep.textContent()).toContain(`Key good-key #${good.id}`);
    expect(await sleep.textContent()).toMatch(/owner.* #1/);
    const wake = log.getByRole("row", { name: /key\.auto_wake/ });
    expect(await wake.textContent()).toContain("System");
    expect(await wake.textContent()).toContain(`Key good-key #${good.id}`);
    expect(errors).toEqual([]);
  }, 30_000);
});
