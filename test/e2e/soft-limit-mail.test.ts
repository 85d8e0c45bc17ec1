import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { SMTPServer } from "smtp-server";
import { createManualClock } from "../../src/core/clock.ts";
import { addKey, usageRows } from "../helpers/keys.ts";
import { json, sse, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { DEFAULT_RESOURCES } from "../helpers/owner-ops.ts";
import { startRouter, waitFor, type TestRouter } from "../helpers/router.ts";

/**
 * Issue 5, SoftLimit: crossing it sends one mail per business month to the account's
 * BillingEmail (else Email) through the SMTP configuration items; a mail failure is
 * logged and never blocks or fails the request. EMAIL_PASS is secret: masked on
 * export, sealed at rest, and the mask written back keeps it.
 */

interface Received {
  from: string | undefined;
  to: string[];
  data: string;
}

interface Smtp {
  port: number;
  mails: Received[];
  logins: Array<{ username: string | undefined; password: string | undefined }>;
  close(): Promise<void>;
}

async function startSmtp(): Promise<Smtp> {
  const mails: Received[] = [];
  const logins: Smtp["logins"] = [];
  const server = new SMTPServer({
    authOptional: true,
    allowInsecureAuth: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onAuth(auth, _session, callback) {
      logins.push({ username: auth.username, password: auth.password ?? undefined });
      callback(null, { user: auth.username });
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : undefined,
          to: session.envelope.rcptTo.map((r) => r.address),
          data: Buffer.concat(chunks).toString("utf8"),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.server.address() as AddressInfo).port;
  return { port, mails, logins, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const PRICING = { ChatPricing: { "acme-*": { InputText: 2, OutputText: 8 } } };
/** 10 in + 10 out = 100,000 nano-credits (0.0001), below the soft limit. */
const SMALL = { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 };
/** 1000 in + 1000 out = 10,000,000 nano-credits (0.01), above it. */
const LARGE = { prompt_tokens: 1000, completion_tokens: 1000, total_tokens: 2000 };

let router: TestRouter;
let upstream: MockUpstream;
let smtp: Smtp;
const clock = createManualClock(Date.UTC(2026, 4, 20, 12));

async function api(path: string, init: { method?: string; body?: unknown; key?: string | null } = {}) {
  const res = await router.fetch(path, {
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    key: init.key,
    headers: { "content-type": "application/json" },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

let emails = 0;
async function createAccount(fields: Record<string, unknown>) {
  const res = await api("/x-users", { body: { Email: `soft${++emails}@example.com`, CreditGranted: 100, ...fields } });
  if (res.status !== 201) throw new Error(`create: ${res.status} ${JSON.stringify(res.body)}`);
  return { id: res.body.ID as number, key: res.body.APIKey as string, email: res.body.Email as string };
}

/** One chat call whose upstream reports `usage`; no max_tokens, so it reserves the default maximum output (32,768 tokens, ~0.26). */
async function call(key: string, usage: unknown): Promise<{ status: number; ms: number }> {
  upstream.once((req) =>
    json({ id: "c", object: "chat.completion", created: 1, model: req.json.model, choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage }),
  );
  const started = performance.now();
  const res = await api("/v1/chat/completions", { key, body: { model: "acme-chat", messages: [{ role: "user", content: "hi" }] } });
  return { status: res.status, ms: performance.now() - started };
}

const mailsTo = (address: string) => smtp.mails.filter((m) => m.to.includes(address));

beforeAll(async () => {
  smtp = await startSmtp();
  upstream = startMockUpstream();
  router = await startRouter({ clock, pricing: PRICING });
  await addKey(router, { provider: upstream.url });
  const put = await api("/x-config", { method: "PUT", body: { EMAIL_SMTP: "127.0.0.1", EMAIL_PORT: smtp.port, XAI_MAIL: "router@example.com" } });
  expect(put.status).toBe(200);
});
afterAll(async () => {
  await router.stop();
  await upstream.stop();
  await smtp.close();
});

describe("soft-limit mail", () => {
  test("crossing SoftLimit sends exactly one mail to BillingEmail; later calls that month send none; a new month sends again", async () => {
    const acct = await createAccount({ SoftLimit: 0.001, BillingEmail: "billing@example.com" });
    const other = await createAccount({ SoftLimit: 0.001 });

    // Below the limit: no mail.
    expect((await call(acct.key, SMALL)).status).toBe(200);
    // Crossing it.
    expect((await call(acct.key, LARGE)).status).toBe(200);
    const [mail] = (await waitFor(() => (mailsTo("billing@example.com").length > 0 ? mailsTo("billing@example.com") : undefined), 5000, "the soft-limit mail"))!;
    expect(mail!.from).toBe("router@example.com");
    expect(mail!.to).toEqual(["billing@example.com"]);
    expect(mail!.data).toContain("soft limit");
    expect(mail!.data).toContain("0.001");
    // Not to the account's own Email when a BillingEmail is set.
    expect(mailsTo(acct.email)).toHaveLength(0);
    // The first call alone (0.0001) did not send one: the mail came after the crossing call.
    expect((await usageRows(router)).filter((r) => r.account_id === acct.id).map((r) => r.cost_nanos)).toEqual([100_000, 10_000_000]);

    // More spending the same month.
    for (let i = 0; i < 3; i++) expect((await call(acct.key, LARGE)).status).toBe(200);
    // Another account crossing its limit afterwards: once its mail (to its Email, having no
    // BillingEmail) has arrived, any second mail for the first account would have too.
    expect((await call(other.key, LARGE)).status).toBe(200);
    await waitFor(() => mailsTo(other.email).length === 1, 5000, "the second account's mail");
    expect(mailsTo("billing@example.com")).toHaveLength(1);

    // Next month, crossing again sends again.
    clock.set(Date.UTC(2026, 5, 1, 12));
    expect((await call(acct.key, LARGE)).status).toBe(200);
    await waitFor(() => mailsTo("billing@example.com").length === 2, 5000, "next month's mail");
    expect(mailsTo("billing@example.com")[1]!.data).toContain("2026-06");
  });

  test("a manager's SoftLimit counts its whole subtree: its children's charges send the manager's mail", async () => {
    const manager = await createAccount({ SoftLimit: 0.015, BillingEmail: "team-billing@example.com", Resources: `${DEFAULT_RESOURCES},/x-users*` });
    const child = await api("/x-users", { key: manager.key, body: { Email: `soft${++emails}@example.com`, CreditGranted: 1, SoftLimit: 0.015 } });
    expect(child.status).toBe(201);
    const other = await api("/x-users", { key: manager.key, body: { Email: `soft${++emails}@example.com`, CreditGranted: 1, SoftLimit: 0.015 } });
    // Each child spends 0.01, below its own 0.015; together 0.02, past the manager's.
    expect((await call(child.body.APIKey, LARGE)).status).toBe(200);
    expect(mailsTo("team-billing@example.com")).toHaveLength(0);
    expect((await call(other.body.APIKey, LARGE)).status).toBe(200);
    const [mail] = (await waitFor(() => (mailsTo("team-billing@example.com").length > 0 ? mailsTo("team-billing@example.com") : undefined), 5000, "the manager's mail"))!;
    expect(mail!.data).toContain("accounts under it");
    expect(mail!.data).toContain("0.0200");
    expect(mailsTo(child.body.Email)).toHaveLength(0);
  });

  test("a reservation alone does not cross SoftLimit: only what calls were charged counts", async () => {
    const acct = await createAccount({ SoftLimit: 0.01 });
    const witness = await createAccount({ SoftLimit: 0.001 });
    // A slow stream reserves its worst case (~0.26, above the limit) and will cost 0.0001.
    upstream.once(() =>
      sse(
        [
          { id: "s", object: "chat.completion.chunk", created: 1, model: "acme-chat", choices: [{ index: 0, delta: { content: "a" }, finish_reason: null }] },
          { id: "s", object: "chat.completion.chunk", created: 1, model: "acme-chat", choices: [], usage: SMALL },
        ],
        { delayMs: 300, done: true },
      ),
    );
    const stream = await router.fetch("/v1/chat/completions", {
      method: "POST",
      key: acct.key,
      body: JSON.stringify({ model: "acme-chat", stream: true, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(stream.status).toBe(200);
    // While it runs, a small call is charged (0.0001 spent, 0.033 reserved).
    expect((await call(acct.key, SMALL)).status).toBe(200);
    await stream.text();
    await waitFor(async () => (await usageRows(router)).filter((r) => r.account_id === acct.id).length === 2, 5000, "both calls recorded");
    // A later mail to another account proves the notifier has had its chance.
    expect((await call(witness.key, LARGE)).status).toBe(200);
    await waitFor(() => mailsTo(witness.email).length === 1, 5000, "the witness mail");
    expect(mailsTo(acct.email)).toHaveLength(0);
    // Actually crossing it sends the mail.
    expect((await call(acct.key, LARGE)).status).toBe(200);
    await waitFor(() => mailsTo(acct.email).length === 1, 5000, "the mail after real spending");
  });

  test("an unreachable mail server never blocks or fails the request; the failure is logged", async () => {
    expect((await api("/x-config", { method: "PUT", body: { EMAIL_PORT: await closedPort() } })).status).toBe(200);
    try {
      const acct = await createAccount({ SoftLimit: 0.001 });
      const result = await call(acct.key, LARGE);
      expect(result.status).toBe(200);
      await waitFor(() => router.logs.some((line) => line.includes("soft-limit mail failed") && line.includes(`account=${acct.id}`)), 5000, "the failure log");
      // The next request is not held up either.
      expect((await call(acct.key, SMALL)).status).toBe(200);
      expect(mailsTo(acct.email)).toHaveLength(0);
    } finally {
      await api("/x-config", { method: "PUT", body: { EMAIL_PORT: smtp.port } });
    }
  });

  test("a mail server that accepts the connection and never answers does not delay the response", async () => {
    const sockets: Socket[] = [];
    const silent: Server = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", () => resolve()));
    expect((await api("/x-config", { method: "PUT", body: { EMAIL_PORT: (silent.address() as AddressInfo).port } })).status).toBe(200);
    try {
      const acct = await createAccount({ SoftLimit: 0.001 });
      const result = await call(acct.key, LARGE);
      expect(result.status).toBe(200);
      // The mailer is connected and waiting for a greeting (for up to 10 s) while the
      // response has long been delivered.
      await waitFor(() => sockets.length > 0, 5000, "the mailer's connection");
      expect(result.ms).toBeLessThan(1000);
      expect((await call(acct.key, SMALL)).status).toBe(200);
    } finally {
      await api("/x-config", { method: "PUT", body: { EMAIL_PORT: smtp.port } });
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });
});

describe("EMAIL_PASS", () => {
  const SECRET = "mail-pass-Zq8#not-in-any-file";

  test("is masked on export, sealed at rest, kept when the mask is written back, and used to log in", async () => {
    const put = await api("/x-config", { method: "PUT", body: { EMAIL_AUTH: "router-mailer", EMAIL_PASS: SECRET } });
    expect(put.status).toBe(200);
    expect(put.body.configs.EMAIL_PASS).toBe("********");
    const exported = await api("/x-config");
    expect(exported.body.configs).toMatchObject({ EMAIL_AUTH: "router-mailer", EMAIL_PASS: "********", EMAIL_SMTP: "127.0.0.1", XAI_MAIL: "router@example.com" });
    expect(JSON.stringify(exported.body)).not.toContain(SECRET);

    // Sealed at rest: no database file holds it in the clear.
    const file = new Database(join(router.dataDir, "router.db"));
    file.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    file.close();
    const files = readdirSync(router.dataDir).filter((name) => name.startsWith("router.db"));
    expect(files.length).toBeGreaterThan(0);
    for (const name of files) expect(readFileSync(join(router.dataDir, name)).includes(Buffer.from(SECRET))).toBe(false);

    // Writing the export back (mask included) leaves the stored password unchanged.
    const again = await api("/x-config", { method: "PUT", body: { EMAIL_PASS: "********", EMAIL_AUTH: "router-mailer" } });
    expect(again.status).toBe(200);
    expect(again.body.configs.EMAIL_PASS).toBe("********");

    // The mailer logs in with the real password.
    const acct = await createAccount({ SoftLimit: 0.001 });
    expect((await call(acct.key, LARGE)).status).toBe(200);
    await waitFor(() => mailsTo(acct.email).length === 1, 5000, "the mail sent with authentication");
    expect(smtp.logins.at(-1)).toEqual({ username: "router-mailer", password: SECRET });
    // And the password never reached a log line.
    expect(router.logs.some((line) => line.includes(SECRET))).toBe(false);
  });
});
