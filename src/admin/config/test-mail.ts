import type { Principal } from "../../accounts/principal.ts";
import { isValidEmail, normaliseEmail } from "../../accounts/validation.ts";
import type { ServeConfig } from "../../config.ts";
import type { Clock } from "../../core/clock.ts";
import { badRequest, HttpError, rateLimited } from "../../core/errors.ts";
import { redact } from "../../core/redact.ts";
import { parseJsonObject, readBodyBytes } from "../../http/body.ts";
import { clientIp } from "../../http/client-ip.ts";
import type { Mailer } from "../../mail/mailer.ts";
import type { AddressGuard } from "../../upstreams/address-policy.ts";
import type { State, WindowCounter } from "../../state/state.ts";
import type { OperationLog } from "../oplog/writer.ts";
import { SECRET_MASK } from "./items.ts";
import { bodyCheck } from "../../wire/check.ts";
import { TestMailBody, type TestMailResult } from "../../wire/config.ts";
import type { ConfigService } from "./service.ts";

/**
 * What sending a test mail uses: the tenant's mailer and its SMTP items (to name the
 * server and mask the password), the operation log, and the request limits. The
 * caller's tenant view (`Caller["tenant"]`) carries all of it.
 */
/** The tenant whose mail settings are tried. */
export interface MailTenant {
  tenantId: number;
  mailer: Mailer;
  settings: Pick<ConfigService, "raw">;
}

/** Test mails a tenant may send an hour. */
export const TEST_MAILS_PER_HOUR = 10;

export interface TestMailDeps {
  config: Pick<ServeConfig, "maxBody" | "trustProxy">;
  addressGuard: Pick<AddressGuard, "check">;
  /** Counts each tenant's test mails (shared, so the limit holds across instances). */
  state: Pick<State, "counts">;
  oplog: OperationLog;
  clock: Clock;
}

export type { TestMailResult };

const checkBody = bodyCheck(TestMailBody, {
  rules: {
    to: (to) => {
      if (to !== null && !isValidEmail(normaliseEmail(to))) throw badRequest("to must be a valid email address", "to");
    },
  },
});

/** The recipient: `{"to": "<email>"}`, or the caller's own address when the body is empty or has no `to`. */
async function recipient(request: Request, limit: number, fallback: string): Promise<string> {
  const bytes = await readBodyBytes(request, limit);
  if (new TextDecoder().decode(bytes).trim() === "") return fallback;
  const { to } = checkBody(parseJsonObject(bytes));
  return to === undefined || to === null ? fallback : normaliseEmail(to);
}

/**
 * A mail failure fit for a client: the transport's message (which carries the SMTP
 * server's answer or the connection error), with the SMTP password removed in the
 * forms it could take on the wire (plain, and base64 as AUTH LOGIN/PLAIN send it).
 */
export function mailFailure(error: unknown, pass: string | undefined): HttpError {
  const code = error instanceof Error && "code" in error && typeof error.code === "string" ? error.code : undefined;
  let message = error instanceof Error ? error.message : String(error);
  if (pass && pass.length >= 4) {
    for (const form of [pass, Buffer.from(pass).toString("base64")]) message = message.split(form).join(SECRET_MASK);
  }
  message = redact(message).slice(0, 500);
  return new HttpError("upstream", `Sending the test mail failed${code ? ` (${code})` : ""}: ${message}`, { code: "mail_failed" });
}

/**
 * A mail server host must pass the upstream address policy, as a provider URL does: with
 * BYOK sign-ups a tenant is anyone, and a test mail to a host of the router's own network
 * would report that host's banner (a port scanner). 400 naming EMAIL_SMTP.
 */
export async function checkMailHost(guard: Pick<AddressGuard, "check">, host: string): Promise<void> {
  if (!host) return;
  const refusal = await guard.check(`https://${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}/`);
  if (refusal) throw badRequest(`EMAIL_SMTP may not be ${host}: ${refusal}`, "EMAIL_SMTP", "mail_host_refused");
}

/**
 * `POST /x-config/test-mail` (owner only): sends one mail through the current SMTP
 * items and reports the server's answer. 400 when EMAIL_SMTP or XAI_MAIL is unset;
 * 502 with the mail error when sending fails. Written to the operation log either way.
 */
export async function sendTestMail(deps: TestMailDeps, tenant: MailTenant, request: Request, principal: Principal): Promise<TestMailResult> {
  const caller = principal.account;
  const to = await recipient(request, deps.config.maxBody, caller.email);
  if (!tenant.mailer.configured()) {
    throw badRequest("Mail is not configured: set EMAIL_SMTP and XAI_MAIL (and EMAIL_PORT, EMAIL_AUTH, EMAIL_PASS as the server needs)", "EMAIL_SMTP", "mail_not_configured");
  }
  // Checked again at each send: a name may resolve elsewhere since it was saved.
  await checkMailHost(deps.addressGuard, tenant.settings.raw("EMAIL_SMTP") ?? "");
  // A test mail goes to any address through any server the tenant names: with sign-ups
  // open, unlimited it would make the router a mail sender for anyone.
  const counter: WindowCounter = { kind: "window", key: `test-mail:${tenant.tenantId}`, windowMs: 3_600_000 };
  const verdict = await deps.state.counts.admit([{ counter, limit: TEST_MAILS_PER_HOUR, add: 1 }], deps.clock.now());
  if (!verdict.admitted) {
    throw rateLimited(`At most ${TEST_MAILS_PER_HOUR} test mails an hour; try again later`, "test_mail_rate_limited", verdict.refusal.retryAfterMs);
  }
  const server = `${tenant.settings.raw("EMAIL_SMTP")}:${tenant.settings.raw("EMAIL_PORT") ?? 587}`;
  const log = (sent: boolean) =>
    deps.oplog.write({
      tenantId: tenant.tenantId,
      actorId: caller.id,
      action: "config.test_mail",
      details: { to, server, sent },
      ip: clientIp(request, deps.config.trustProxy) ?? null,
    });
  try {
    const result = await tenant.mailer.send({
      to,
      subject: "Router test mail",
      text: `This is a test mail from the router, sent through ${server} at ${new Date(deps.clock.now()).toISOString()} at the request of account ${caller.name}.\n\nIf you can read this, mail delivery works.`,
    });
    log(true);
    return { object: "test_mail", sent: true, to, response: result.response };
  } catch (error) {
    log(false);
    throw mailFailure(error, tenant.settings.raw("EMAIL_PASS"));
  }
}
