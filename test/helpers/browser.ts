import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";

/** Debian's chromium, as `.ci/run` installs it. */
export const CHROMIUM = "/usr/bin/chromium";
export const ARTIFACTS = join(import.meta.dir, "..", "artifacts");

/**
 * playwright-core connects its client and its in-process server with one
 * setImmediate per message. Under Bun 1.4 immediates sometimes run out of order
 * (seen here: a later message delivered first, then "Cannot find parent object" or
 * "Object with guid … was not bound", which kills the browser connection), and a
 * chain of them sometimes stalls. This re-wires both directions through a queue
 * drained by one pending zero-delay timer at a time, so messages keep their order.
 * Nothing else in the process is touched.
 */
function keepPlaywrightMessagesInOrder(): void {
  type Sink = { onmessage: (message: unknown) => void; dispatch: (message: unknown) => void };
  const client = (chromium as unknown as { _connection?: Sink & { toImpl?: (x: unknown) => Sink | undefined } })._connection;
  const server = client?.toImpl?.(client);
  if (!client || !server || (client as { ordered?: boolean }).ordered) return;
  const ordered = (target: Sink) => {
    const queue: unknown[] = [];
    const next = () => {
      const message = queue.shift();
      if (queue.length > 0) setTimeout(next, 0);
      target.dispatch(message);
    };
    return (message: unknown) => {
      queue.push(message);
      if (queue.length === 1) setTimeout(next, 0);
    };
  };
  server.onmessage = ordered(client);
  client.onmessage = ordered(server);
  (client as { ordered?: boolean }).ordered = true;
}

export function launchChromium(): Promise<Browser> {
  keepPlaywrightMessagesInOrder();
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
}

/** One request the browser sent: where to, and every header. */
export interface SeenRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
}

/**
 * A page in a new context whose every request (documents, scripts, fetches) is
 * recorded, and whose script errors are collected. The listener is attached to the
 * context before the page exists, so even the page's first request is seen.
 */
export async function recordedPage(browser: Browser, seen: SeenRequest[], errors: string[]): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  context.on("request", (request) => {
    seen.push({ url: request.url(), method: request.method(), headers: request.headers() });
  });
  const page = await context.newPage();
  page.on("pageerror", (error) => errors.push(error.message));
  // Console errors too (a Content-Security-Policy violation shows up here), except
  // the browser's note on each refused request, which the tests cause on purpose.
  page.on("console", (message) => {
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) errors.push(message.text());
  });
  return { context, page };
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** Paste the key into the login form and sign in. */
export async function signIn(page: Page, url: string, key: string): Promise<void> {
  await page.goto(url);
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
}
