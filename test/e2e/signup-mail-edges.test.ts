import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer, type AddressInfo, type Socket } from "node:net";
import { SMTPServer } from "smtp-server";
import { createManualClock } from "../../src/core/clock.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";
import { api, type Reply } from "../helpers/owner-ops.ts";
import { signupTransport } from "../../src/tenancy/signup-routes.ts";

/**
 * The BYOK self sign-up (`--signup`, POST /x-signup and its confirmation) and what the
 * router mails (confirmations, test mail), black-box over HTTP against a local SMTP
 * capture, from a security review: the groups that were named "FINDING" failed before
 * their fixes; the last group is what the review probed and found right.
 */

interface Captured {
  to: string[];
  body: string;
}

/** A capturing SMTP server (no STARTTLS, login optional), as the existing mail tests use. */
async function captureSmtp(host = "127.0.0.1", onAuth?: (user: string | undefined, pass: string | null | undefined) => void) {
  const mails: Captured[] = [];
  const server = new SMTPServer({
    authOptional: true,
    allowInsecureAuth: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onAuth(auth, _session, callback) {
      onAuth?.(auth.username, auth.password);
      callback(null, { user: auth.username });
    },
    onData(stream, session, done) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address), body: Buffer.concat(chunks).toString("utf8") });
        done();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, host, () => resolve()));
  const port = (server.server.address() as AddressInfo).port;
  return { mails, port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** The token of a confirmation mail (quoted-printable soft breaks undone). */
const tokenOf = (mail: Captured | undefined) => (mail ? /"token":"([^"]+)"/.exec(mail.body.replace(/=\r\n/g, ""))?.[1] : undefined);

let smtp: Awaited<ReturnType<typeof captureSmtp>>;
/** BYOK, sign-up with confirmation mail; --trust-proxy so each test can speak from its own client address. */
let mailing: TestRouter;
/** BYOK, sign-up without confirmation (the key is returned at once). */
let direct: TestRouter;

beforeAll(async () => {
  smtp = await captureSmtp();
  mailing = await startRouter({
    config: { byok: true, signup: true, trustProxy: true, signupSmtp: `smtp://127.0.0.1:${smtp.port}`, signupFrom: "router@example.com" },
  });
  direct = await startRouter({ config: { byok: true, signup: true } });
});
afterAll(async () => {
  await mailing.stop();
  await direct.stop();
  await smtp.close();
});

/** POST /x-signup on the mailing router from client address `ip`. */
async function signup(body: unknown, ip: string): Promise<Reply> {
  const res = await mailing.fetch("/x-signup", { method: "POST", key: null, headers: { "x-forwarded-for": ip, "content-type": "application/json" }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}
const confirm = (token: string | undefined) => api(mailing, "/x-signup/confirm", { method: "POST", key: null, body: { token } });
const mailsTo = (address: string) => smtp.mails.filter((m) => m.to.includes(address));

describe("sign-up input is checked before a token is stored or mailed", () => {
  // docs/api.md "Sign-up": "Invalid email or unknown fields: 400"; "Name optional (...), 4–63
  // characters of letters, digits, `.`, `_`, `-`". With --signup-smtp the Name is not checked
  // at POST /x-signup (src/tenancy/signup-routes.ts:70 only keeps any string): the request is
  // answered 202, a token is stored and mailed, and the token can never create the account:
  // the confirmation fails 400 and has used the token up (404 afterwards).
  test("an invalid Name is refused before a token is stored or mailed", async () => {
    const email = "badname@victim.example";
    const res = await signup({ Email: email, Name: "!" }, "10.1.0.1");
    const token = tokenOf(mailsTo(email)[0]);
    const first = token ? (await confirm(token)).status : null;
    const again = token ? (await confirm(token)).status : null;
    expect({ signup: res.status, mailed: mailsTo(email).length, first, again }).toEqual({ signup: 400, mailed: 0, first: null, again: null });
  });

  // The pending sign-ups live in State (memory or Redis). Nothing bounds the Name that is
  // kept with each one but --max-body (64 MiB by default): five a hour per client address,
  // each holding megabytes, for 24 hours.
  test("a megabyte Name is not kept in the pending sign-ups", async () => {
    const res = await signup({ Email: "bigname@victim.example", Name: `a${"b".repeat(1 << 20)}` }, "10.1.0.2");
    expect(res.status).toBe(400);
  });

  // Minor, same place: `Name` of the wrong type is silently dropped (signup-routes.ts:70) and
  // the account gets a generated name, where POST /x-users refuses it (its wire model). The
  // docs' convention: "a misspelt field is never silently ignored while the call goes ahead".
  test("a Name that is not a string is refused, not ignored", async () => {
    const res = await api(direct, "/x-signup", { method: "POST", key: null, body: { Email: "typed@name.example", Name: 12345 } });
    expect(res.status).toBe(400);
  });
});

describe("how often a stranger's address can be mailed", () => {
  // The only bound on confirmation mail is per client address (signup-routes.ts:44-54,
  // key `signup:<ip>`); nothing bounds the mail one recipient gets. OWASP (Forgot password /
  // registration cheat sheets, "rate limit per account/recipient") and every mail sender's
  // abuse policy expect the recipient to be protected, not only the sender's quota: here
  // each further client address adds five more mails to the same victim an hour.
  test("one recipient gets no more confirmation mail an hour than one client may send", async () => {
    const victim = "victim-flood@corp.example";
    const statuses: number[] = [];
    for (const ip of ["10.2.0.1", "10.2.0.2", "10.2.0.3"]) for (let i = 0; i < 5; i++) statuses.push((await signup({ Email: victim }, ip)).status);
    expect(mailsTo(victim).length).toBeLessThanOrEqual(5);
  });

  // The per-address key is the full IPv6 address. Anyone with an ordinary IPv6 allocation
  // holds a /64 (2^64 addresses), so "more than 5 sign-ups an hour from one client address:
  // 429" (docs/api.md) does not hold for IPv6 clients; rate limits conventionally count an
  // IPv6 client by its /64 (RFC 6177 / RFC 4291 subnet size).
  test("an IPv6 client is counted by its /64: the sixth sign-up an hour from one /64 is 429", async () => {
    const statuses: number[] = [];
    for (let i = 1; i <= 6; i++) statuses.push((await signup({ Email: `v6-${i}@corp.example` }, `2001:db8:77::${i}`)).status);
    expect(statuses).toEqual([202, 202, 202, 202, 202, 429]);
  });
});

describe("a tenant's mail items reach only hosts the address policy allows, and test mail is limited", () => {
  // docs/api.md "Upstream address policy": in the BYOK style a tenant's connections may not
  // go to loopback or private addresses (without --allow-private-upstreams), and never to
  // cloud metadata or link-local addresses. EMAIL_SMTP / EMAIL_PORT of a tenant (anyone,
  // with --signup) are checked for shape only (src/admin/config/items.ts:116-130) and
  // POST /x-config/test-mail connects there (src/mail/mailer.ts:42) and returns what the
  // server said (src/admin/config/test-mail.ts:58-66): a port scanner and banner grabber of
  // the router's own network, for an anonymous sign-up.
  test("a signed-up tenant cannot point EMAIL_SMTP at loopback or metadata addresses and read their banners", async () => {
    let connections = 0;
    const internal = createServer((socket: Socket) => {
      connections++;
      socket.on("error", () => {});
      socket.write("SSH-2.0-OpenSSH_9.6 internal-bastion-7\r\n");
    });
    await new Promise<void>((resolve) => internal.listen(0, "127.0.0.1", () => resolve()));
    try {
      const port = (internal.address() as AddressInfo).port;
      const tenant = await api(direct, "/x-signup", { method: "POST", key: null, body: { Email: "scanner@evil.example" } });
      expect(tenant.status).toBe(201);
      const key: string = tenant.body.APIKey;
      const loopback = await api(direct, "/x-config", { method: "PUT", key, body: { EMAIL_SMTP: "127.0.0.1", EMAIL_PORT: port, XAI_MAIL: "x@evil.example" } });
      const sent = await api(direct, "/x-config/test-mail", { method: "POST", key, body: { to: "x@evil.example" } });
      const metadata = await api(direct, "/x-config", { method: "PUT", key, body: { EMAIL_SMTP: "169.254.169.254", EMAIL_PORT: 80 } });
      expect({
        loopbackWrite: loopback.status,
        metadataWrite: metadata.status,
        connections,
        bannerShown: JSON.stringify(sent.body).includes("internal-bastion-7"),
      }).toEqual({ loopbackWrite: 400, metadataWrite: 400, connections: 0, bannerShown: false });
    } finally {
      internal.close();
    }
  });

  // Sign-ups are held to 5 an hour per address, yet the tenant such a sign-up creates may
  // send as many mails as it likes through POST /x-config/test-mail, to any address, from any
  // XAI_MAIL sender, through any EMAIL_SMTP (a recipient's MX on port 25 needs no login):
  // the router's own address becomes an unmetered mail sender. No limit of any kind applies
  // (test-mail.ts has none; owners have no RPM by default). OWASP API4:2023 "Unrestricted
  // Resource Consumption" names exactly "sending emails" among the flows to limit.
  test("test mail from a self-registered tenant is rate limited", async () => {
    const relay = await captureSmtp();
    const open = await startRouter({ config: { byok: true, signup: true, allowPrivateUpstreams: true } });
    try {
      const tenant = await api(open, "/x-signup", { method: "POST", key: null, body: { Email: "spammer@evil.example" } });
      const key: string = tenant.body.APIKey;
      expect((await api(open, "/x-config", { method: "PUT", key, body: { EMAIL_SMTP: "127.0.0.1", EMAIL_PORT: relay.port, XAI_MAIL: "ceo@bank.example" } })).status).toBe(200);
      const statuses: number[] = [];
      for (let i = 0; i < 30; i++) statuses.push((await api(open, "/x-config/test-mail", { method: "POST", key, body: { to: "stranger@elsewhere.example" } })).status);
      expect(statuses).toContain(429);
    } finally {
      await open.stop();
      await relay.close();
    }
  });
});

describe("the sign-up SMTP password never goes out in clear to another machine", () => {
  // A server not on this machine must take STARTTLS before the login (nodemailer's
  // requireTLS): one that does not offer it, or a path that strips the offer (RFC 3207
  // section 6), would get the password and every confirmation token in clear.
  test("STARTTLS is required unless the server is on this machine or TLS is there from the start", () => {
    expect(signupTransport("smtp://mailer:Sm7p%40ss@mail.example.com:587")).toMatchObject({ host: "mail.example.com", port: 587, requireTLS: true, secure: false, auth: { user: "mailer", pass: "Sm7p@ss" } });
    expect(signupTransport("smtp://u:p@10.0.0.5:25").requireTLS).toBe(true);
    for (const local of ["smtp://u:p@127.0.0.1:2525", "smtp://u:p@localhost:25", "smtp://u:p@[::1]:25"]) expect(signupTransport(local).requireTLS).toBe(false);
    expect(signupTransport("smtps://u:p@mail.example.com")).toMatchObject({ secure: true, port: 465, requireTLS: false });
  });
});

describe("emails and names are unique per tenant, not across the deployment", () => {
  // docs/api.md "The BYOK deployment style": nothing crosses tenants, another tenant's
  // account answers 404 exactly like one that never existed. Emails and names were unique
  // deployment-wide (src/accounts/insert.ts asked every live account), so POST /x-users
  // answered 409 quoting another tenant's account, without any rate limit: an oracle of
  // every tenant's addresses and names.
  test("a tenant cannot learn another tenant's account emails or names through POST /x-users", async () => {
    const child = await api(direct, "/x-users", { body: { Email: "hidden-child@tenant-a.example", Name: "hidden-child-a" } });
    expect(child.status).toBe(201);
    const b = await api(direct, "/x-signup", { method: "POST", key: null, body: { Email: "owner@tenant-b.example" } });
    const keyB: string = b.body.APIKey;
    const byEmail = await api(direct, "/x-users", { key: keyB, body: { Email: "hidden-child@tenant-a.example" } });
    const byName = await api(direct, "/x-users", { key: keyB, body: { Email: "fresh-b@tenant-b.example", Name: "hidden-child-a" } });
    expect([byEmail.status, byName.status]).toEqual([201, 201]);
    // Inside one tenant they stay unique: the management API's 409 envelope, nothing written.
    const again = await api(direct, "/x-users", { key: keyB, body: { Email: "Hidden-Child@tenant-a.example" } });
    const sameName = await api(direct, "/x-users", { key: keyB, body: { Email: "third-b@tenant-b.example", Name: "hidden-child-a" } });
    expect([again.status, again.body.error?.code, sameName.status, sameName.body.error?.code]).toEqual([409, "email_taken", 409, "name_taken"]);
    expect(Number((await api(direct, "/x-users", { key: keyB })).headers.get("x-total-count"))).toBe(2);
  });

  // Sub-accounts need no confirmation of their address, and a confirmed sign-up was refused
  // for an address any account used: a tenant could give a sub-account a stranger's
  // address and so lock its owner out of signing up, for as long as the sub-account lived.
  test("a tenant cannot lock a stranger out of sign-up by giving a sub-account the stranger's address", async () => {
    const attacker = "attacker@squatter.example";
    expect((await signup({ Email: attacker }, "10.3.0.1")).status).toBe(202);
    const attackerKey: string = (await confirm(tokenOf(mailsTo(attacker)[0]))).body.APIKey;
    const squat = await api(mailing, "/x-users", { key: attackerKey, body: { Email: "ceo@victim-corp.example" } });
    expect(squat.status).toBe(201);
    expect((await signup({ Email: "ceo@victim-corp.example" }, "10.3.0.2")).status).toBe(202);
    const victim = await confirm(tokenOf(mailsTo("ceo@victim-corp.example")[0]));
    expect(victim.status).toBe(201);
    // Each is its own tenant's: the victim's owner is not the squatter's sub-account.
    expect(victim.body.ID).not.toBe(squat.body.ID);
    expect((await api(mailing, `/x-dna/${encodeURIComponent("ceo@victim-corp.example")}`, { key: attackerKey })).body.ID).toBe(squat.body.ID);
  });

  // A sign-up's Name was checked against every live account too: the confirmation answered
  // 409 name_taken for a name only another tenant's sub-account used. The new owner's
  // tenant is empty, so any valid name is free in it.
  test("sign-up takes a Name another tenant's account uses, and tells nothing of it", async () => {
    expect((await api(mailing, "/x-users", { body: { Email: "named@tenant-a.example", Name: "wanted-name" } })).status).toBe(201);
    expect((await signup({ Email: "newcomer@tenant-n.example", Name: "wanted-name" }, "10.3.0.3")).status).toBe(202);
    const confirmed = await confirm(tokenOf(mailsTo("newcomer@tenant-n.example")[0]));
    expect([confirmed.status, confirmed.body.Name]).toEqual([201, "wanted-name"]);
  });
});

describe("what the review probed and found right", () => {
  // Tokens: 24 random bytes (192 bits, base64url), stored as SHA-256 (signup-routes.ts:19,77),
  // taken once (memory Map delete / Redis GETDEL), looked up by hash (no timing leak of the
  // token's characters). Single use and wrong-token 404 are in byok.test.ts; expiry is here.
  test("a token has 192 random bits and stops working after 24 hours", async () => {
    const clock = createManualClock(Date.parse("2026-05-01T00:00:00Z"));
    const local = await captureSmtp();
    const router = await startRouter({ clock, config: { byok: true, signup: true, signupSmtp: `smtp://127.0.0.1:${local.port}`, signupFrom: "router@example.com" } });
    try {
      for (const email of ["late@x.example", "ontime@x.example"]) expect((await api(router, "/x-signup", { method: "POST", key: null, body: { Email: email } })).status).toBe(202);
      const late = tokenOf(local.mails[0])!;
      const onTime = tokenOf(local.mails[1])!;
      expect(late).toMatch(/^[A-Za-z0-9_-]{32}$/);
      clock.advance(24 * 3_600_000);
      expect((await api(router, "/x-signup/confirm", { method: "POST", key: null, body: { token: onTime } })).status).toBe(201);
      clock.advance(1);
      expect((await api(router, "/x-signup/confirm", { method: "POST", key: null, body: { token: late } })).status).toBe(404);
    } finally {
      await router.stop();
      await local.close();
    }
  });

  // With confirmation mail, a registered address gets the same 202 as a new one: the answer
  // does not enumerate accounts (docs say "a used email: 409"; the 202 is the safer choice,
  // and the 409 only shows at the confirmation, to the mailbox's owner).
  test("with confirmation mail the answer does not tell whether an address is registered", async () => {
    const used = await signup({ Email: "owner@localhost" }, "10.9.0.1");
    const fresh = await signup({ Email: "never-seen@example.com" }, "10.9.0.1");
    expect([used.status, fresh.status]).toEqual([202, 202]);
    expect(Object.keys(used.body)).toEqual(Object.keys(fresh.body));
  });

  // Header injection: emails are refused with any C0/C1 control or U+2028/9 (validation.ts:6),
  // XAI_MAIL likewise; subjects are constants and bodies text/plain (no HTML to inject into).
  test("CR/LF in an address is refused and nothing is mailed; case variants are one address", async () => {
    const before = smtp.mails.length;
    expect((await signup({ Email: "a@x.example\r\nBcc: other@y.example" }, "10.9.0.2")).status).toBe(400);
    expect((await signup({ Email: "a@x.example\u2028Bcc: other@y.example" }, "10.9.0.2")).status).toBe(400);
    expect(smtp.mails.length).toBe(before);
    expect((await api(mailing, "/x-config", { method: "PUT", body: { XAI_MAIL: "a@x.example\r\nBcc: o@y.example" } })).status).toBe(400);
    expect((await signup({ Email: "Mixed.Case@X.Example" }, "10.9.0.2")).status).toBe(202);
    const mail = smtp.mails.at(-1)!;
    expect(mail.to).toEqual(["mixed.case@x.example"]);
    expect(mail.body).toContain("Content-Type: text/plain");
    expect((await api(direct, "/x-signup", { method: "POST", key: null, body: { Email: "OWNER@LOCALHOST" } })).status).toBe(409);
  });

  // At the limit nothing is mailed, and the 429 says when to come back.
  test("the sixth sign-up an hour from one IPv4 address is 429 with Retry-After and mails nothing", async () => {
    for (let i = 0; i < 5; i++) expect((await signup({ Email: `limit${i}@x.example` }, "10.9.0.3")).status).toBe(202);
    const before = smtp.mails.length;
    const limited = await signup({ Email: "limit5@x.example" }, "10.9.0.3");
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(smtp.mails.length).toBe(before);
  });

  // A failing sign-up mail server: a 500 naming the request id, the password neither in the
  // answer nor in the log line (which holds nodemailer's message only).
  test("a sign-up mail failure is a 502 signup_mail_failed that shows the SMTP password nowhere", async () => {
    const router = await startRouter({ config: { byok: true, signup: true, signupSmtp: "smtp://mailer:Sm7pSecretPw@127.0.0.1:1", signupFrom: "router@example.com" } });
    try {
      const res = await api(router, "/x-signup", { method: "POST", key: null, body: { Email: "x@example.com" } });
      expect([res.status, res.body.error.code]).toEqual([502, "signup_mail_failed"]);
      expect(JSON.stringify(res.body)).not.toContain("Sm7pSecretPw");
      expect(router.logs.join("\n")).not.toContain("Sm7pSecretPw");
      expect(router.logs.join("\n")).not.toContain(Buffer.from("Sm7pSecretPw").toString("base64"));
    } finally {
      await router.stop();
    }
  });

  // Other tenants' records stay 404/empty for a self-registered owner (beyond byok.test.ts):
  // a system-wide notice of tenant A, A's owner by id or email in /x-route and /x-users.
  test("a self-registered owner reaches nothing of another tenant by id, email, notice or route", async () => {
    expect((await api(direct, "/x-news", { body: { title: "A-wide", content: "for tenant A" } })).status).toBe(201);
    const t = await api(direct, "/x-signup", { method: "POST", key: null, body: { Email: "curious@tenant-c.example" } });
    const key: string = t.body.APIKey;
    expect(JSON.stringify((await api(direct, "/x-news", { key })).body)).not.toContain("A-wide");
    expect(JSON.stringify((await api(direct, "/dashboard/news", { key })).body)).not.toContain("A-wide");
    expect((await api(direct, "/x-users/1", { method: "PUT", key, body: { Alias: "x" } })).status).toBe(404);
    expect((await api(direct, "/x-route?model=m&account=owner%40localhost", { key })).status).toBe(404);
  });
});
