import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { launchChromium, recordedPage, signIn, type SeenRequest } from "../helpers/browser.ts";
import { addKey } from "../helpers/keys.ts";
import { chatCompletion, sse, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { chatRequestId, createAccount, MANAGER_RESOURCES, type CreatedAccount } from "../helpers/owner-ops.ts";
import { startRouter, waitFor, type TestRouter } from "../helpers/router.ts";

// Review of the console for keyboard-only and screen-reader users and WCAG 2.2 AA:
// reflow at 320 CSS px, contrast of text and focus indicators in both themes, live
// regions that do not flood. Contrast is computed here from the browser's colours.
let router: TestRouter;
let upstream: MockUpstream;
let browser: Browser;
let manager: CreatedAccount;
let user: CreatedAccount;
const seen: SeenRequest[] = [];
const errors: string[] = [];

const chunk = (content: string | null, usage?: unknown) => ({
  id: "chatcmpl-a11y",
  object: "chat.completion.chunk",
  created: 1,
  model: "model-a",
  choices: content === null ? [] : [{ index: 0, delta: { content }, finish_reason: null }],
  ...(usage !== undefined && { usage }),
});

beforeAll(async () => {
  router = await startRouter({ pricing: { ChatPricing: { "*": { InputText: 2, OutputText: 8 } } } });
  upstream = startMockUpstream().route("POST", "/v1/chat/completions", (r) =>
    // The playground streams: its answer arrives in pieces.
    r.json.stream
      ? sse([chunk("Hello"), chunk(" from"), chunk(" the playground"), chunk(null, { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 })], { done: true, delayMs: 40 })
      : chatCompletion(r.json.model, { prompt: 11, completion: 7 }),
  );
  await addKey(router, { provider: `${upstream.url}/v1`, name: "main-key", noSleep: true });
  manager = await createAccount(router, { CreditGranted: 10, Resources: MANAGER_RESOURCES, Name: "team-lead" });
  user = await createAccount(router, { CreditGranted: 5, Name: "plain-user" });
  await createAccount(router, { CreditGranted: 1, Name: "team-child" }, manager.key);
  // A day of usage: the bill and usage pages draw charts of it.
  await chatRequestId(router, user.key, "model-a");
  await chatRequestId(router, manager.key, "model-b");
  await router.deps.usageRecorder.flush();
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await upstream?.stop();
  await router?.stop();
});

/** Opens `path` signed in as `key`, in a page `width` CSS px wide. */
async function openAs(key: string, path: string, options: { width?: number; dark?: boolean } = {}): Promise<Page> {
  const { page } = await recordedPage(browser, seen, errors);
  await page.setViewportSize({ width: options.width ?? 1280, height: 800 });
  await page.emulateMedia({ colorScheme: options.dark ? "dark" : "light" });
  await signIn(page, `${router.url}/console/`, key);
  await page.waitForSelector("header.top");
  await page.goto(`${router.url}${path}`);
  await page.waitForSelector("header.top");
  return page;
}

/** Goes to one section of the page by its tab (as a user would) and waits for its content. */
async function section(page: Page, label: string, ready: string): Promise<void> {
  await page.getByRole("navigation", { name: / sections$/ }).getByRole("link", { name: label, exact: true }).click();
  await page.getByRole("heading", { level: 2, name: label, exact: true }).waitFor();
  await page.locator(ready).first().waitFor();
  await page.waitForFunction(() => !document.querySelector("main .loading"));
}

/** How far the page itself scrolls sideways (0: it fits the window). */
const sideways = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

describe("reflow at 320 CSS px (WCAG 1.4.10)", () => {
  test("pages with tables and charts fit the width: only the tables scroll, in their own box", async () => {
    const owner = await openAs(router.ownerKey, "/console/accounts", { width: 320 });
    await section(owner, "Accounts", ".table-wrap tbody tr");
    expect(await sideways(owner)).toBe(0);
    await section(owner, "Usage", "figure.chart canvas, p.empty");
    expect(await sideways(owner)).toBe(0);
    await owner.goto(`${router.url}/console/owner#log`);
    await section(owner, "Operation log", ".table-wrap tbody tr");
    expect(await sideways(owner)).toBe(0);
    // The tables themselves still scroll in their box, so nothing is cut off.
    expect(await owner.locator(".table-wrap").first().evaluate((box) => box.scrollWidth > box.clientWidth)).toBe(true);

    const plain = await openAs(user.key, "/console/#bills", { width: 320 });
    await section(plain, "Bill history", "figure.chart canvas");
    expect(await sideways(plain)).toBe(0);
    expect(errors).toEqual([]);
    await owner.context().close();
    await plain.context().close();
  }, 60_000);
});

type Rgba = [number, number, number, number];
const rgba = (css: string): Rgba => {
  const [r = 0, g = 0, b = 0, a = 1] = (css.match(/[\d.]+/g) ?? []).map(Number);
  return [r, g, b, a];
};

/** The colour drawn behind something: `layers` are the CSS backgrounds from it outwards, composed over white. */
const behind = (layers: string[]): Rgba => {
  const stack: Rgba[] = [];
  for (const layer of layers.map(rgba)) {
    if (layer[3] > 0) stack.push(layer);
    if (layer[3] >= 1) break;
  }
  const [r, g, b] = stack.reverse().reduce<number[]>((base, c) => base.map((v, i) => c[i]! * c[3] + v * (1 - c[3])), [255, 255, 255]);
  return [r!, g!, b!, 1];
};

/** WCAG's contrast ratio of `fg` (drawn over `bg` when translucent) and `bg`. */
function contrast(fg: Rgba, bg: Rgba): number {
  const over = [0, 1, 2].map((i) => fg[i]! * fg[3] + bg[i]! * (1 - fg[3]));
  const lum = (c: number[]) =>
    c.map((v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)).reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i]!, 0);
  const [high, low] = [lum(over), lum(bg.slice(0, 3))].sort((x, y) => y - x);
  return (high! + 0.05) / (low! + 0.05);
}

describe("focus indicator (WCAG 2.4.7, 1.4.11)", () => {
  for (const dark of [false, true]) {
    test(`every stop of the Tab order shows an outline of 3:1 against what is around it (${dark ? "dark" : "light"} theme)`, async () => {
      const page = await openAs(router.ownerKey, "/console/owner", { dark });
      await section(page, "Provider keys", ".table-wrap tbody tr");
      await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
      const weak: string[] = [];
      let stops = 0;
      // From the top: the skip link, the header bar, the section tabs, the keys' forms and table.
      for (let i = 0; i < 40; i++) {
        await page.keyboard.press("Tab");
        const stop = await page.evaluate(() => {
          const el = document.activeElement as HTMLElement;
          if (!el || el === document.body) return null;
          const style = getComputedStyle(el);
          // The outline is drawn outside the element (outline-offset), on its parent's background.
          const layers: string[] = [];
          for (let e = el.parentElement; e; e = e.parentElement) layers.push(getComputedStyle(e).backgroundColor);
          const name = `${el.tagName.toLowerCase()} "${(el.getAttribute("aria-label") ?? el.textContent ?? "").trim().slice(0, 30)}"`;
          return { name, outline: style.outlineStyle === "none" ? null : style.outlineColor, width: parseFloat(style.outlineWidth), layers };
        });
        if (!stop) break;
        stops++;
        const ratio = stop.outline && stop.width >= 2 ? contrast(rgba(stop.outline), behind(stop.layers)) : 0;
        if (ratio < 3) weak.push(`${stop.name}: ${ratio.toFixed(2)}:1`);
      }
      expect(stops).toBeGreaterThan(15);
      expect(weak).toEqual([]);
      await page.context().close();
    }, 60_000);
  }
});

/** The text of every live region on the page: what a screen reader would announce when it changes. */
const liveTexts = (page: Page) =>
  page.evaluate(() =>
    Array.from(document.querySelectorAll('[aria-live]:not([aria-live="off"]), [role="status"], [role="alert"], [role="log"]')).map((e) => e.textContent?.trim() ?? ""),
  );

describe("the Requests live tail and screen readers", () => {
  test("a call the tail adds is not announced; moving to another page is", async () => {
    for (let i = 0; i < 21; i++) await chatRequestId(router, user.key, `paged-${i}`);
    await router.deps.usageRecorder.flush();
    const page = await openAs(router.ownerKey, "/console/requests");
    const calls = page.getByRole("region", { name: "Model calls" });
    await calls.locator("tbody tr").first().waitFor();
    await page.getByLabel(/^Live tail/).check();
    const before = await liveTexts(page);
    await chatRequestId(router, user.key, "tail-model");
    await router.deps.usageRecorder.flush();
    await calls.locator("tbody tr").first().getByText("tail-model").waitFor({ timeout: 15_000 });
    // With a call every few seconds, a region that changed with each one would talk over everything else.
    expect(await liveTexts(page)).toEqual(before);

    await page.getByLabel(/^Live tail/).uncheck();
    await page.getByRole("button", { name: "Next →" }).click();
    await page.waitForFunction(() =>
      Array.from(document.querySelectorAll('[aria-live]:not([aria-live="off"]), [role="status"]')).some((e) => /page 2 of \d/i.test(e.textContent ?? "")),
    );
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);
});

/** The opaque colours drawn in the axis labels' strip (left of the plot) of the first chart's canvas, and the chart's background. */
async function axisColours(page: Page): Promise<{ drawn: string[]; background: string[] }> {
  return page.evaluate(() => {
    const figure = document.querySelector("figure.chart")!;
    const canvas = figure.querySelector("canvas")!;
    const scale = canvas.width / canvas.getBoundingClientRect().width;
    const strip = canvas.getContext("2d")!.getImageData(0, 0, Math.floor(60 * scale), canvas.height).data;
    const drawn = new Set<string>();
    for (let i = 0; i < strip.length; i += 4) if (strip[i + 3] === 255) drawn.add(`rgb(${strip[i]}, ${strip[i + 1]}, ${strip[i + 2]})`);
    const background: string[] = [];
    for (let e: Element | null = canvas; e; e = e.parentElement) background.push(getComputedStyle(e).backgroundColor);
    return { drawn: [...drawn], background };
  });
}

describe("charts in both themes", () => {
  test("the axis labels are readable (4.5:1) in the dark theme, and after switching theme", async () => {
    const page = await openAs(user.key, "/console/#bills", { dark: true });
    await section(page, "Bill history", "figure.chart canvas");
    const best = async () => {
      const { drawn, background } = await axisColours(page);
      return Math.max(0, ...drawn.map((c) => contrast(rgba(c), behind(background))));
    };
    // The labels' own colour is the one that stands out most from the background.
    expect(await best()).toBeGreaterThanOrEqual(4.5);
    const toggle = page.getByRole("button", { name: /^Theme:/ });
    await toggle.click(); // dark, chosen
    await toggle.click(); // light
    await page.waitForFunction(() => document.documentElement.dataset.theme === "light");
    await page.locator("figure.chart canvas").first().waitFor();
    expect(await best()).toBeGreaterThanOrEqual(4.5);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);
});

/** What has focus: its role-ish tag and its name (aria-label, else its text). */
const focused = (page: Page) =>
  page.evaluate(() => {
    const el = document.activeElement as HTMLElement | null;
    return el && el !== document.body ? `${el.tagName.toLowerCase()}: ${(el.getAttribute("aria-label") ?? el.textContent ?? "").trim()}` : "body";
  });

/**
 * Expects `read()` to give `expected`, allowing it 5 s to get there: focus moves and
 * lists change on the render after a key press, not with it.
 */
async function expectSoon<T>(read: () => Promise<T>, expected: T | RegExp): Promise<void> {
  const fits = (value: T) => (expected instanceof RegExp ? expected.test(String(value)) : JSON.stringify(value) === JSON.stringify(expected));
  await waitFor(async () => fits(await read()), 5000).catch(() => undefined);
  if (expected instanceof RegExp) expect(String(await read())).toMatch(expected);
  else expect(await read()).toEqual(expected as Awaited<T>);
}

/** Expects focus on `expected` ("tag: name"), soon. */
const expectFocus = (page: Page, expected: string | RegExp) => expectSoon(() => focused(page), expected);

describe("editors shown in place of a list, by keyboard", () => {
  test("opening an account's or a key's editor takes focus to it; Cancel brings it back to the button that opened it", async () => {
    const page = await openAs(router.ownerKey, "/console/accounts");
    await section(page, "Accounts", ".table-wrap tbody tr");
    await page.getByRole("button", { name: "+ Create account" }).focus();
    await page.keyboard.press("Enter");
    await page.getByRole("form", { name: "Create an account" }).waitFor();
    // A keyboard user is taken to the form (not left on a button that is gone), a screen reader reads its title.
    await expectFocus(page, "h3: Create an account");
    await page.keyboard.press("Tab");
    await expectFocus(page, "input: ");
    expect(await page.evaluate(() => (document.activeElement as HTMLInputElement).labels?.[0]?.textContent)).toBe("Email *");
    await page.getByRole("button", { name: "Cancel" }).focus();
    await page.keyboard.press("Enter");
    await page.getByRole("form", { name: "Create an account" }).waitFor({ state: "detached" });
    await page.waitForFunction(() => document.activeElement !== document.body, undefined, { timeout: 5000 });
    await expectFocus(page, "button: + Create account");

    // Edit far down the list: focus goes up to the form, and back to the same row's button after.
    await page.getByRole("button", { name: "Edit plain-user" }).focus();
    await page.keyboard.press("Enter");
    await page.getByRole("form", { name: /^Edit account plain-user/ }).waitFor();
    await expectFocus(page, /^h3: Edit account plain-user/);
    await page.getByRole("button", { name: "Cancel" }).focus();
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.activeElement !== document.body, undefined, { timeout: 5000 });
    await expectFocus(page, "button: Edit plain-user");

    await page.goto(`${router.url}/console/owner#keys`);
    await section(page, "Provider keys", ".table-wrap tbody tr");
    await page.getByRole("button", { name: "Edit key 1 (main-key)" }).focus();
    await page.keyboard.press("Enter");
    await page.getByRole("form", { name: "Edit key 1" }).waitFor();
    await expectFocus(page, "h3: Edit key 1");
    await page.getByRole("button", { name: "Cancel" }).focus();
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.activeElement !== document.body, undefined, { timeout: 5000 });
    await expectFocus(page, "button: Edit key 1 (main-key)");
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);
});

describe("a key shown once, by keyboard", () => {
  test("after Rotate key (Enter in the form) focus is on the new key, ready to copy; Done leaves focus in the page", async () => {
    const rotating = await createAccount(router, { CreditGranted: 1, Name: "rotating-user" });
    const page = await openAs(rotating.key, "/console/#key");
    await section(page, "API key", "[data-testid=rotate-confirm]");
    const confirm = await page.getByTestId("rotate-confirm").textContent();
    await page.getByLabel("Confirmation").focus();
    await page.keyboard.type(confirm!);
    await page.keyboard.press("Enter");
    await page.getByRole("textbox", { name: "Your new API key." }).waitFor();
    // Not lost to <body> with the form's button: the one thing to do now is copy the key.
    await page.waitForFunction(() => document.activeElement !== document.body, undefined, { timeout: 5000 });
    await expectFocus(page, "input: Your new API key.");
    await page.getByRole("button", { name: "Done" }).focus();
    await page.keyboard.press("Enter");
    await page.getByRole("textbox", { name: "Your new API key." }).waitFor({ state: "detached" });
    await page.waitForFunction(() => document.activeElement !== document.body, undefined, { timeout: 5000 });
    expect(await page.evaluate(() => !!document.activeElement?.closest("main"))).toBe(true);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);
});

describe("ordered rows (mappers), by keyboard", () => {
  test("+ Add row goes to the new row; a row moved by keyboard keeps focus, so Enter again moves it further; removing the last row keeps focus in the list", async () => {
    const page = await openAs(router.ownerKey, "/console/owner#routing");
    await section(page, "Routing", "[data-testid=mapper-MODEL_MAPPER] button");
    const mapper = page.getByTestId("mapper-MODEL_MAPPER");
    const patterns = () => mapper.getByRole("textbox", { name: /^Requested model pattern, row/ }).evaluateAll((inputs) => inputs.map((i) => (i as HTMLInputElement).value));
    for (const [i, name] of ["first-*", "second-*", "third-*"].entries()) {
      await mapper.getByRole("button", { name: "+ Add row" }).focus();
      await page.keyboard.press("Enter");
      // Focus moves to the new row (on the next render), so the user types there.
      await page.waitForFunction((label) => document.activeElement?.getAttribute("aria-label") === label, `Requested model pattern, row ${i + 1}`, { timeout: 5000 });
      await page.keyboard.type(name);
    }
    await expectSoon(patterns, ["first-*", "second-*", "third-*"]);

    await mapper.getByRole("button", { name: "Move row 3 up" }).focus();
    await page.keyboard.press("Enter");
    await expectSoon(patterns, ["first-*", "third-*", "second-*"]);
    // Focus went with the row: Enter again moves the same row further up.
    await expectFocus(page, "button: Move row 2 up");
    await page.keyboard.press("Enter");
    await expectSoon(patterns, ["third-*", "first-*", "second-*"]);
    // At the top it cannot go further up: focus is on the same row's other move button, not lost.
    await expectFocus(page, "button: Move row 1 down");

    await mapper.getByRole("button", { name: "Remove row 3" }).focus();
    await page.keyboard.press("Enter");
    await expectSoon(patterns, ["third-*", "first-*"]);
    await expectFocus(page, "button: Remove row 2");
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);
});

/** An input's accessible description: the text of the elements its aria-describedby names. */
const description = (page: Page, label: string) =>
  page.getByLabel(label, { exact: true }).evaluate((input) =>
    (input.getAttribute("aria-describedby") ?? "")
      .split(/\s+/)
      .filter(Boolean)
      .map((id) => document.getElementById(id)?.textContent ?? "")
      .join(" "),
  );

describe("per-model limits, by keyboard and screen reader", () => {
  test("a bad limit marks the field that is wrong and describes it there; + Add and Remove keep focus in the editor", async () => {
    const page = await openAs(router.ownerKey, "/console/accounts");
    await section(page, "Accounts", ".table-wrap tbody tr");
    await page.getByRole("button", { name: "+ Create account" }).click();
    const form = page.getByRole("form", { name: "Create an account" });
    await form.getByRole("button", { name: "+ Add model limit" }).focus();
    await page.keyboard.press("Enter");
    // Focus moves to the new row's pattern (on the next render), so the user types there.
    await page.waitForFunction(() => document.activeElement?.getAttribute("aria-label") === "Model pattern, row 1", undefined, { timeout: 5000 });
    await page.keyboard.type("gpt-*");
    expect(await page.getByLabel("Model pattern, row 1").inputValue()).toBe("gpt-*");
    await page.getByLabel("RPM, row 1").fill("lots");
    // The RPM field is the wrong one, and says why; the pattern is fine.
    await expectSoon(() => page.getByLabel("RPM, row 1").getAttribute("aria-invalid"), "true");
    await expectSoon(() => description(page, "RPM, row 1"), /RPM must be a whole number/);
    await expectSoon(() => page.getByLabel("Model pattern, row 1").getAttribute("aria-invalid"), null);
    await page.getByLabel("RPM, row 1").fill("10");
    await expectSoon(() => page.getByLabel("RPM, row 1").getAttribute("aria-invalid"), null);
    await page.getByLabel("Model pattern, row 1").fill("bad pattern!");
    await expectSoon(() => page.getByLabel("Model pattern, row 1").getAttribute("aria-invalid"), "true");
    await expectSoon(() => description(page, "Model pattern, row 1"), /\S/);

    await form.getByRole("button", { name: "Remove row 1" }).focus();
    await page.keyboard.press("Enter");
    await page.getByLabel("Model pattern, row 1").waitFor({ state: "detached" });
    await expectFocus(page, "button: + Add model limit");
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);
});

describe("the playground and screen readers", () => {
  test("a streamed answer is announced once, whole, not piece by piece as it arrives", async () => {
    // A key that names its model, so the playground has one to offer.
    await addKey(router, { provider: `${upstream.url}/v1`, name: "play-key", noSleep: true, config: { provider_type: "standard", models: ["play-model"] } });
    const page = await openAs(user.key, "/console/playground");
    await page.getByRole("heading", { name: "Chat with a model" }).waitFor();
    // Every state any live region passes through, as a screen reader would be told of it.
    await page.evaluate(() => {
      const said: string[] = [];
      (window as unknown as { said: string[] }).said = said;
      const live = '[aria-live]:not([aria-live="off"]), [role="status"], [role="alert"], [role="log"]';
      new MutationObserver(() => {
        for (const region of Array.from(document.querySelectorAll(live))) said.push(region.textContent ?? "");
      }).observe(document.body, { childList: true, subtree: true, characterData: true });
    });
    await page.getByLabel("Message").fill("Say hello");
    await page.getByRole("button", { name: "Send" }).focus();
    await page.keyboard.press("Enter");
    await page.getByTestId("answer-cost").waitFor();
    const said = await page.evaluate(() => (window as unknown as { said: string[] }).said);
    expect(said.filter((text) => text.includes("Hello") && !text.includes("Hello from the playground"))).toEqual([]);
    expect(said.some((text) => text.includes("Hello from the playground"))).toBe(true);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);
});

describe("page titles (WCAG 2.4.2)", () => {
  test("the title names the sign-in form, then the section shown, and follows the section tabs", async () => {
    const { page } = await recordedPage(browser, seen, errors);
    await page.goto(`${router.url}/console/owner`);
    await page.getByLabel("API key").waitFor();
    expect(await page.title()).toBe("Sign in · Router console");
    await page.getByLabel("API key").fill(router.ownerKey);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { level: 2, name: "Provider keys" }).waitFor();
    expect(await page.title()).toBe("Provider keys · Owner console · Router console");
    await section(page, "Routing", "[data-testid=mapper-MODEL_MAPPER]");
    expect(await page.title()).toBe("Routing · Owner console · Router console");
    await page.goto(`${router.url}/console/accounts#usage`);
    await page.getByRole("heading", { level: 2, name: "Usage" }).waitFor();
    expect(await page.title()).toBe("Usage · Sub-accounts · Router console");
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);
});

/** Each input with a placeholder on the page: its name and the placeholder's contrast with the field. */
async function placeholderContrasts(page: Page): Promise<Array<[string, number]>> {
  const found = await page.evaluate(() =>
    Array.from(document.querySelectorAll<HTMLInputElement | HTMLTextAreaElement>("input[placeholder]:not([placeholder='']), textarea[placeholder]:not([placeholder=''])")).map((input) => {
      const layers: string[] = [];
      for (let e: Element | null = input; e; e = e.parentElement) layers.push(getComputedStyle(e).backgroundColor);
      const style = getComputedStyle(input, "::placeholder");
      const [r, g, b, a = 1] = (style.color.match(/[\d.]+/g) ?? []).map(Number);
      return { name: input.getAttribute("aria-label") ?? input.labels?.[0]?.textContent ?? input.placeholder, colour: `rgba(${r}, ${g}, ${b}, ${a * Number(style.opacity)})`, layers };
    }),
  );
  return found.map((f) => [f.name, contrast(rgba(f.colour), behind(f.layers))]);
}

describe("placeholder text contrast (WCAG 1.4.3)", () => {
  for (const dark of [false, true]) {
    test(`example formats in placeholders read at 4.5:1 (${dark ? "dark" : "light"} theme)`, async () => {
      const { page } = await recordedPage(browser, seen, errors);
      await page.emulateMedia({ colorScheme: dark ? "dark" : "light" });
      await page.goto(`${router.url}/console/`);
      await page.getByLabel("API key").waitFor();
      const login = await placeholderContrasts(page);
      await signIn(page, `${router.url}/console/`, router.ownerKey);
      await page.waitForURL(/\/console\/owner$/);
      await page.goto(`${router.url}/console/owner#routing`);
      await section(page, "Routing", "[data-testid=mapper-MODEL_MAPPER]");
      await page.getByTestId("mapper-MODEL_MAPPER").getByRole("button", { name: "+ Add row" }).click();
      const routing = await placeholderContrasts(page);
      expect(login.length + routing.length).toBeGreaterThan(2);
      expect([...login, ...routing].filter(([, ratio]) => ratio < 4.5)).toEqual([]);
      expect(errors).toEqual([]);
      await page.context().close();
    }, 60_000);
  }
});

describe("sortable columns", () => {
  test("announce their order; the accounts' Select column (checkboxes) is not offered as sortable", async () => {
    const page = await openAs(router.ownerKey, "/console/accounts");
    await section(page, "Accounts", ".table-wrap tbody tr");
    const table = page.getByRole("region", { name: "Accounts" });
    const select = table.getByRole("columnheader", { name: "Select" });
    expect(await select.getAttribute("aria-sort")).toBeNull();
    expect(await select.getByRole("button").count()).toBe(0);
    const name = table.getByRole("columnheader", { name: "Name" });
    expect(await name.getAttribute("aria-sort")).toBe("none");
    await name.getByRole("button", { name: "Name" }).focus();
    await page.keyboard.press("Enter");
    await expectSoon(() => name.getAttribute("aria-sort"), "ascending");
    await page.keyboard.press("Enter");
    await expectSoon(() => name.getAttribute("aria-sort"), "descending");
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);
});

describe("headings", () => {
  test("every section of every page has one h1 (the page), one h2 (the section) and its parts under it", async () => {
    const sections: Record<string, string[]> = {
      "/console/owner": ["Provider keys", "Routing", "Limits & mail", "Pricing", "Notices", "Operation log"],
      "/console/accounts": ["Accounts", "Batch credit", "Notices", "Usage"],
      "/console/": ["Live usage", "Bill history", "Account & limits", "Prices", "Notices", "API key", "Quick start"],
      "/console/requests": ["Model calls"],
      "/console/playground": ["Chat"],
    };
    const page = await openAs(router.ownerKey, "/console/owner");
    const wrong: string[] = [];
    for (const [path, labels] of Object.entries(sections)) {
      await page.goto(`${router.url}${path}`);
      for (const label of labels) {
        await page.getByRole("navigation", { name: / sections$/ }).getByRole("link", { name: label, exact: true }).click();
        await page.getByRole("heading", { level: 2, name: label, exact: true }).waitFor();
        await page.waitForFunction(() => !document.querySelector("main .loading"));
        const outline = await page.evaluate(() =>
          Array.from(document.querySelectorAll("h1, h2, h3, h4, h5, h6"))
            .filter((h) => !h.closest("dialog:not([open])"))
            .map((h) => Number(h.tagName[1])),
        );
        // One h1 and one h2, in that order; no level skipped on the way down.
        const skips = outline.some((level, i) => i > 0 && level > outline[i - 1]! + 1);
        if (outline.filter((l) => l === 1).length !== 1 || outline.filter((l) => l === 2).length !== 1 || outline[0] !== 1 || skips) wrong.push(`${path} ${label}: ${outline.join(" ")}`);
      }
    }
    expect(wrong).toEqual([]);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 120_000);
});

describe("the Requests live tail on a later page", () => {
  test("says once that new calls arrived, not again with every further call", async () => {
    for (let i = 0; i < 21; i++) await chatRequestId(router, user.key, `later-${i}`);
    await router.deps.usageRecorder.flush();
    const page = await openAs(router.ownerKey, "/console/requests");
    const calls = page.getByRole("region", { name: "Model calls" });
    await calls.locator("tbody tr").first().waitFor();
    await page.getByRole("navigation", { name: "Model calls pages" }).getByRole("button", { name: "Next →" }).click();
    await expectSoon(() => page.getByRole("navigation", { name: "Model calls pages" }).locator("span").first().textContent(), /^Page 2 of/);
    await page.getByLabel(/^Live tail/).check();
    await chatRequestId(router, user.key, "later-new-1");
    await router.deps.usageRecorder.flush();
    await page.getByText("1 new call since this page was opened.").waitFor({ timeout: 15_000 });
    const first = await liveTexts(page);
    expect(first.some((text) => /new call/.test(text))).toBe(true);
    await chatRequestId(router, user.key, "later-new-2");
    await router.deps.usageRecorder.flush();
    await page.getByText("2 new calls since this page was opened.").waitFor({ timeout: 15_000 });
    // The count on screen goes up; what a screen reader was told does not change with it.
    expect(await liveTexts(page)).toEqual(first);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);
});

describe("buttons that are busy or done, by keyboard", () => {
  test("a key's Test keeps focus while it runs and after; Save and Undo of a mapper keep focus in the mapper", async () => {
    const page = await openAs(router.ownerKey, "/console/owner#keys");
    await section(page, "Provider keys", ".table-wrap tbody tr");
    await page.getByRole("button", { name: "Test key 1 (main-key)" }).focus();
    await page.keyboard.press("Enter");
    await page.getByTestId("key-test-1").getByText(/^(OK|Failed)/).waitFor({ timeout: 15_000 });
    // Not lost to <body> while the button was busy: the user goes on from the same row.
    await expectFocus(page, "button: Test key 1 (main-key)");

    await section(page, "Routing", "[data-testid=mapper-LEVEL_MAPPER]");
    const mapper = page.getByTestId("mapper-LEVEL_MAPPER");
    await mapper.getByRole("button", { name: "+ Add row" }).click();
    await mapper.getByLabel("Model pattern, row 1").fill("kbd-*");
    await mapper.getByLabel("Level, row 1").fill("1");
    await mapper.getByRole("button", { name: "Save LEVEL_MAPPER" }).focus();
    await page.keyboard.press("Enter");
    await mapper.getByText("LEVEL_MAPPER saved: it applies from the next request.").waitFor();
    await expectSoon(() => page.evaluate(() => !!document.activeElement?.closest("[data-testid=mapper-LEVEL_MAPPER]")), true);
    await mapper.getByLabel("Level, row 1").fill("2");
    await mapper.getByRole("button", { name: "Undo changes" }).focus();
    await page.keyboard.press("Enter");
    await expectSoon(() => mapper.getByLabel("Level, row 1").inputValue(), "1");
    await expectSoon(() => page.evaluate(() => !!document.activeElement?.closest("[data-testid=mapper-LEVEL_MAPPER]")), true);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);
});

/** The label of the focused field (its <label>, else its aria-label). */
const focusedField = (page: Page) =>
  page.evaluate(() => {
    const el = document.activeElement as HTMLInputElement | null;
    return el?.labels?.[0]?.textContent ?? el?.getAttribute("aria-label") ?? el?.tagName ?? "";
  });

describe("a form sent with mistakes, by keyboard", () => {
  test("takes focus to the first field to fix (account and key forms)", async () => {
    const page = await openAs(router.ownerKey, "/console/accounts");
    await section(page, "Accounts", ".table-wrap tbody tr");
    await page.getByRole("button", { name: "+ Create account" }).click();
    const form = page.getByRole("form", { name: "Create an account" });
    await form.getByLabel("Allowed IPs").fill("not an address");
    await form.getByRole("button", { name: "Create account" }).focus();
    await page.keyboard.press("Enter");
    await form.getByText("Fix the fields marked above.").waitFor();
    // The first of the two (Email is required) is where the user lands, its error read with it.
    await expectSoon(() => focusedField(page), "Email *");

    await page.goto(`${router.url}/console/owner#keys`);
    await section(page, "Provider keys", ".table-wrap tbody tr");
    await page.getByRole("button", { name: "+ Add provider key" }).click();
    const keyForm = page.getByRole("form", { name: "Add a provider key" });
    await keyForm.getByRole("button", { name: "Add key" }).focus();
    await page.keyboard.press("Enter");
    await keyForm.getByText("Fix the fields marked above.").waitFor();
    await expectSoon(async () => (await focusedField(page)).replace(" *", ""), /^(Provider URL|Level|API key)/);
    expect(await page.evaluate(() => document.activeElement?.getAttribute("aria-invalid"))).toBe("true");
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);
});

describe("auto-updating content (WCAG 2.2.2)", () => {
  test("Live usage refreshes every 5 s until the user pauses it; paused, it asks no more", async () => {
    const { page } = await recordedPage(browser, seen, errors);
    // The page's timers run on a clock the test moves: 5 s pass without the test waiting them out.
    await page.clock.install();
    await signIn(page, `${router.url}/console/`, user.key);
    await page.getByRole("heading", { level: 2, name: "Live usage" }).waitFor();
    const polls = () => seen.filter((r) => r.url.endsWith("/dashboard/live")).length;
    await page.getByTestId("live-today").waitFor();
    const before = polls();
    await page.clock.runFor(5_500);
    await expectSoon(async () => polls() > before, true);

    const auto = page.getByRole("checkbox", { name: /^Refresh every 5 s/ });
    expect(await auto.isChecked()).toBe(true);
    await auto.focus();
    await page.keyboard.press("Space");
    await expectSoon(() => auto.isChecked(), false);
    const paused = polls();
    await page.clock.runFor(20_000);
    // Nothing asked (a poll in flight when paused may still land): the numbers hold still to be read.
    await page.getByTestId("live-today").waitFor();
    expect(polls()).toBe(paused);
    await page.keyboard.press("Space");
    await expectSoon(() => auto.isChecked(), true);
    await page.clock.runFor(5_500);
    await expectSoon(async () => polls() > paused, true);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);
});

describe("tables in the Tab order", () => {
  test("a table is a Tab stop (to scroll it by keyboard) only when it has something to scroll", async () => {
    const page = await openAs(router.ownerKey, "/console/accounts");
    await section(page, "Accounts", ".table-wrap tbody tr");
    const box = page.getByRole("region", { name: "Accounts" });
    expect(await box.evaluate((e) => e.scrollWidth > e.clientWidth)).toBe(false);
    await expectSoon(() => box.evaluate((e) => (e as HTMLElement).tabIndex), -1);
    // Narrow, the same table scrolls sideways: it can be focused and scrolled with the arrow keys.
    await page.setViewportSize({ width: 320, height: 800 });
    await expectSoon(() => box.evaluate((e) => (e as HTMLElement).tabIndex), 0);
    await box.focus();
    await page.keyboard.press("ArrowRight");
    await expectSoon(() => box.evaluate((e) => e.scrollLeft > 0), true);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);
});

describe("filtering the Requests list (WCAG 4.1.3)", () => {
  test("Apply filters and Clear say how many calls match, once the answer is in", async () => {
    const page = await openAs(router.ownerKey, "/console/requests");
    const calls = page.getByRole("region", { name: "Model calls" });
    await calls.locator("tbody tr").first().waitFor();
    const matching = () => liveTexts(page).then((texts) => texts.filter((text) => /match/.test(text)));
    expect(await matching()).toEqual([]);
    await page.getByLabel("Model", { exact: true }).fill("model-a");
    await page.getByRole("button", { name: "Apply filters" }).focus();
    await page.keyboard.press("Enter");
    await expectSoon(matching, ["1 call matches these filters."]);
    await page.getByRole("button", { name: "Clear" }).focus();
    await page.keyboard.press("Enter");
    await expectSoon(async () => (await matching()).some((text) => /^\d+ calls match these filters\.$/.test(text)), true);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);
});

describe("searching the accounts (WCAG 4.1.3)", () => {
  test("says how many accounts match once the answer is in", async () => {
    const page = await openAs(router.ownerKey, "/console/accounts");
    await section(page, "Accounts", ".table-wrap tbody tr");
    const matching = () => liveTexts(page).then((texts) => texts.filter((text) => /match/.test(text)));
    expect(await matching()).toEqual([]);
    await page.getByRole("search", { name: "Find accounts" }).getByLabel("Search", { exact: true }).fill("plain-user");
    await expectSoon(matching, ["1 account matches."]);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);
});

describe("searching keys, the operation log and prices (WCAG 4.1.3)", () => {
  test("each search says how many entries match", async () => {
    const page = await openAs(router.ownerKey, "/console/owner#keys");
    await section(page, "Provider keys", ".table-wrap tbody tr");
    const matching = () => liveTexts(page).then((texts) => texts.filter((text) => /match/.test(text)));
    await page.getByLabel("Provider contains").fill("no-such-provider");
    await expectSoon(matching, ["0 keys match."]);
    await section(page, "Operation log", ".table-wrap tbody tr");
    await page.getByLabel("Action", { exact: true }).fill("no.such.action");
    await expectSoon(matching, ["0 entries match."]);
    await page.goto(`${router.url}/console/#prices`);
    await section(page, "Prices", ".table-wrap tbody tr");
    await page.getByLabel("Search models").fill("no-such-model");
    await expectSoon(matching, ["0 prices match."]);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);
});
