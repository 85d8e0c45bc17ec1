import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { createServer, type AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";
import { startRouter, type TestRouter } from "../helpers/router.ts";
import { api, createAccount, MANAGER_RESOURCES, type CreatedAccount } from "../helpers/owner-ops.ts";

/** Issue 8: `POST /x-config/test-mail` against a local SMTP server. */

const PASSWORD = "smtp-pass-Zq81vX";

interface Received {
  from: string | undefined;
  to: string[];
  body: string;
}

let router: TestRouter;
let smtp: SMTPServer;
let smtpPort: number;
let manager: CreatedAccount;
let received: Received[] = [];
let logins: Array<{ username: string | undefined; password: string | null | undefined }> = [];
let rejectLogin = false;

beforeAll(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    allowInsecureAuth: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onAuth(auth, _session, callback) {
      logins.push({ username: auth.username, password: auth.password });
      if (rejectLogin) {
        const error = Object.assign(new Error("Authentication credentials invalid"), { responseCode: 535 });
        callback(error);
        return;
      }
      callback(null, { user: auth.username });
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : undefined,
          to: session.envelope.rcptTo.map((r) => r.address),
          body: Buffer.concat(chunks).toString("utf8"),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", () => resolve()));
  smtpPort = (smtp.server.address() as AddressInfo).port;
  router = await startRouter();
  manager = await createAccount(router, { Resources: `${MANAGER_RESOURCES},/x-config*` });
});
afterAll(async () => {
  await router.stop();
  await new Promise<void>((resolve) => smtp.close(() => resolve()));
});
beforeEach(async () => {
  received = [];
  logins = [];
  rejectLogin = false;
  await router.deps.settings.reset(["EMAIL_SMTP", "EMAIL_PORT", "EMAIL_AUTH", "EMAIL_PASS", "XAI_MAIL"]);
});

const configure = (values: Record<string, unknown> = {}) =>
  api(router, "/x-config", {
    method: "PUT",
    body: { EMAIL_SMTP: "127.0.0.1", EMAIL_PORT: smtpPort, XAI_MAIL: "router@example.com", EMAIL_AUTH: "mailer", EMAIL_PASS: PASSWORD, ...values },
  });
const testMail = (body?: unknown, key?: string) => api(router, "/x-config/test-mail", { method: "POST", body, key });

/** A local port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("POST /x-config/test-mail", () => {
  test("sends through the configured server and reports its answer", async () => {
    expect((await configure()).status).toBe(200);
    const res = await testMail({ to: "Ops@Example.com" });
    expect(res.status).toBe(200);
    expect(res.body.object).toBe("test_mail");
    expect(res.body.sent).toBe(true);
    expect(res.body.to).toBe("ops@example.com");
    expect(res.body.response).toMatch(/^250\b/);
    expect(received).toHaveLength(1);
    expect(received[0]!.from).toBe("router@example.com");
    expect(received[0]!.to).toEqual(["ops@example.com"]);
    expect(received[0]!.body).toContain("Subject: Router test mail");
    // It logged in with the stored (sealed, masked) credentials.
    expect(logins).toEqual([{ username: "mailer", password: PASSWORD }]);
  });

  test("without `to` (or with an empty body) it goes to the caller's own address", async () => {
    expect((await configure()).status).toBe(200);
    const res = await testMail();
    expect(res.status).toBe(200);
    expect(res.body.to).toBe("owner@localhost");
    expect(received[0]!.to).toEqual(["owner@localhost"]);
    expect((await testMail({})).body.to).toBe("owner@localhost");
  });

  test("uses the current items: a change takes effect on the next test", async () => {
    expect((await configure({ EMAIL_AUTH: "" })).status).toBe(200);
    expect((await testMail({ to: "a@example.com" })).status).toBe(200);
    expect(logins).toEqual([]);
    expect((await configure({ XAI_MAIL: "noreply@example.org" })).status).toBe(200);
    expect((await testMail({ to: "a@example.com" })).status).toBe(200);
    expect(received.map((r) => r.from)).toEqual(["router@example.com", "noreply@example.org"]);
  });

  test("400 when mail is not configured", async () => {
    const res = await testMail({ to: "a@example.com" });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("mail_not_configured");
    expect(res.body.error.message).toContain("EMAIL_SMTP");
    // The server alone is not enough: mail needs a sender (XAI_MAIL).
    expect((await api(router, "/x-config", { method: "PUT", body: { EMAIL_SMTP: "127.0.0.1" } })).status).toBe(200);
    expect((await testMail({ to: "a@example.com" })).status).toBe(400);
  });

  test("400 for a bad recipient or an unknown field", async () => {
    expect((await configure()).status).toBe(200);
    const bad = await testMail({ to: "not-an-address" });
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe("to");
    expect((await testMail({ to: 5 })).status).toBe(400);
    const unknown = await testMail({ to: "a@example.com", cc: "b@example.com" });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.param).toBe("cc");
    expect(received).toHaveLength(0);
  });

  test("502 with the connection error when the server is unreachable", async () => {
    expect((await configure({ EMAIL_PORT: await closedPort() })).status).toBe(200);
    const res = await testMail({ to: "a@example.com" });
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe("mail_failed");
    expect(res.body.error.message).toContain("Sending the test mail failed");
    expect(res.body.error.message).toMatch(/ECONNREFUSED|ECONNECTION/);
    expect(JSON.stringify(res.body)).not.toContain(PASSWORD);
  });

  test("502 with the server's answer when it refuses the login, never the password", async () => {
    rejectLogin = true;
    expect((await configure()).status).toBe(200);
    const res = await testMail({ to: "a@example.com" });
    expect(res.status).toBe(502);
    expect(res.body.error.message).toContain("535");
    const text = JSON.stringify(res.body);
    expect(text).not.toContain(PASSWORD);
    expect(text).not.toContain(Buffer.from(PASSWORD).toString("base64"));
    expect(router.logs.join("\n")).not.toContain(PASSWORD);
  });

  test("owner only", async () => {
    expect((await configure()).status).toBe(200);
    const res = await testMail({ to: "a@example.com" }, manager.key);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe("owner_only");
    expect(received).toHaveLength(0);
  });

  test("each attempt is in the operation log, without the password", async () => {
    expect((await configure()).status).toBe(200);
    await testMail({ to: "log@example.com" });
    const logs = await api(router, "/dashboard/logs?action=config.test_mail&size=1");
    expect(logs.status).toBe(200);
    expect(logs.body.logs[0].details).toEqual({ to: "log@example.com", server: `127.0.0.1:${smtpPort}`, sent: true });
    expect(JSON.stringify(logs.body)).not.toContain(PASSWORD);
  });
});
