import { Elysia } from "elysia";
import { isIPv6 } from "node:net";
import { normaliseAddress, parseRange } from "../accounts/ip-ranges.ts";
import { createHash, randomBytes } from "node:crypto";
import type { Owners } from "../accounts/owners.ts";
import { ACCOUNT_NAME_RULE, isValidAccountName, isValidEmail, normaliseEmail } from "../accounts/validation.ts";
import type { OperationLog } from "../admin/oplog/writer.ts";
import type { ServeConfig } from "../config.ts";
import type { Clock } from "../core/clock.ts";
import { badRequest, HttpError, notFound, rateLimited } from "../core/errors.ts";
import { readJsonObject } from "../http/body.ts";
import { bodyCheck } from "../wire/check.ts";
import { SignupBody, SignupConfirmBody, type SignupCreated, type SignupPending } from "../wire/signup.ts";
import { clientIp } from "../http/client-ip.ts";
import type { State, WindowCounter } from "../state/state.ts";

/** Sign-ups allowed per client address (an IPv6 client's /64) and hour. */
export const SIGNUPS_PER_IP_HOUR = 5;
/** Confirmation mails one address may receive an hour, whoever asks: a stranger's inbox is not a target. */
export const SIGNUP_MAILS_PER_ADDRESS_HOUR = 3;
/** How long a mailed confirmation link stays valid. */
const CONFIRM_TTL_MS = 24 * 3_600_000;
const HOUR_MS = 3_600_000;

/** The bodies' models (those /openapi.json publishes), with the domain's rules for the address and the name. */
const checkSignup = bodyCheck(SignupBody, {
  rules: {
    Email: (email) => {
      if (!isValidEmail(normaliseEmail(email))) throw badRequest("Email is required and must be a valid address", "Email");
    },
    Name: (name) => {
      if (!isValidAccountName(name)) throw badRequest(ACCOUNT_NAME_RULE, "Name");
    },
  },
});
const checkConfirm = bodyCheck(SignupConfirmBody);

const hash = (token: string) => createHash("sha256").update(token).digest("hex");

/**
 * What sign-ups use: the per-address counter and the pending confirmations (shared
 * state, so limits hold across instances), owner creation, and the audit log.
 */
export interface SignupRouteDeps {
  config: Pick<ServeConfig, "signupSmtp" | "signupFrom" | "maxBody" | "trustProxy">;
  state: Pick<State, "counts" | "signups">;
  owners: Owners;
  oplog: OperationLog;
  clock: Clock;
}

/**
 * Self-registration of owners in the BYOK style (`--signup`): `POST /x-signup`
 * creates the owner of a new, empty tenant and returns its key once. With
 * `--signup-smtp` the key is only issued after the address is confirmed with the
 * token mailed to it (`POST /x-signup/confirm`). Rate-limited per client address.
 */
export function signupRoutes(deps: SignupRouteDeps) {
  const smtp = deps.config.signupSmtp;
  const transport = smtp ? import("nodemailer").then((m) => m.default.createTransport(signupTransport(smtp))) : undefined;

  /**
   * Counts a sign-up of the client's address (an IPv6 client by its /64: one allocation
   * holds 2^64 addresses) and, when a confirmation is mailed, of the recipient; refuses
   * past either hourly limit.
   */
  const limit = async (request: Request, mailedTo?: string) => {
    const ip = clientIp(request, deps.config.trustProxy) ?? "unknown";
    const lines = [{ counter: { kind: "window", key: `signup:${clientNetwork(ip)}`, windowMs: HOUR_MS } satisfies WindowCounter, limit: SIGNUPS_PER_IP_HOUR, add: 1 }];
    if (mailedTo !== undefined) lines.push({ counter: { kind: "window", key: `signup-to:${hash(mailedTo)}`, windowMs: HOUR_MS }, limit: SIGNUP_MAILS_PER_ADDRESS_HOUR, add: 1 });
    const verdict = await deps.state.counts.admit(lines, deps.clock.now());
    if (!verdict.admitted) {
      // Both limits reached: the longer wait, or the sign-up is refused again by the other.
      const reached = [verdict.refusal, ...(verdict.refusal.also ?? [])].reduce((a, b) => (b.retryAfterMs > a.retryAfterMs ? b : a));
      const why = reached.line === 0 ? "Too many sign-ups from this address" : "Too many confirmation mails to this email address";
      throw rateLimited(`${why}; try again later`, "signup_rate_limited", reached.retryAfterMs);
    }
  };

  const create = async (email: string, name: string | undefined): Promise<SignupCreated> => {
    const { account, key } = await deps.owners.create({ email, name });
    await deps.oplog.write({ actorId: account.id, tenantId: account.id, action: "tenant.signup", targetId: account.id, details: { email: account.email } });
    return { object: "signup", ID: account.id, Email: account.email, Name: account.name, APIKey: key };
  };

  return new Elysia()
    .post(
      "/x-signup",
      async ({ request, set }) => {
        // The Name is checked now too: found bad at confirmation, the mailed token was spent for nothing.
        const body = checkSignup(await readJsonObject(request, deps.config.maxBody));
        const email = normaliseEmail(body.Email);
        const name = body.Name;
        await limit(request, transport ? email : undefined);
        if (!transport) {
          set.status = 201;
          return create(email, name);
        }
        const token = randomBytes(24).toString("base64url");
        await deps.state.signups.put(hash(token), { email, name }, CONFIRM_TTL_MS, deps.clock.now());
        try {
          await (await transport).sendMail({
            from: deps.config.signupFrom ?? "router@localhost",
            to: email,
            subject: "Confirm your router account",
            text: `To create your account, send this token to POST /x-signup/confirm as {"token":"${token}"}. It is valid for 24 hours.`,
          });
        } catch {
          // A token nobody received is not kept; the mail server's words (its login among them) stay out of the answer.
          await deps.state.signups.take(hash(token), deps.clock.now()).catch(() => undefined);
          throw new HttpError("upstream", "The confirmation mail could not be sent; try again later", { code: "signup_mail_failed" });
        }
        set.status = 202;
        return { object: "signup", status: "confirmation_sent", Email: email } satisfies SignupPending;
      },
      { parse: "none" },
    )
    .post(
      "/x-signup/confirm",
      async ({ request, set }) => {
        const { token } = checkConfirm(await readJsonObject(request, deps.config.maxBody));
        // Taken once: a second confirmation with the same token finds nothing.
        const entry = await deps.state.signups.take(hash(token), deps.clock.now());
        if (!entry) throw notFound("Unknown or expired confirmation token", "signup_token_invalid");
        set.status = 201;
        return create(entry.email, entry.name);
      },
      { parse: "none" },
    );
}

/** The network a client counts as: an IPv6 address by its /64 (what one subscriber gets), others as they are. */
export function clientNetwork(ip: string): string {
  const address = normaliseAddress(ip);
  if (!isIPv6(address)) return address;
  const network = parseRange(`${address}/64`);
  return network ? `${network.base.toString(16)}/64` : address;
}

/**
 * The sign-up mail server from `--signup-smtp` (`smtp://user:pass@host:587`, or `smtps://`
 * for TLS from the start). A server that is not on this machine must take STARTTLS
 * before the login: one that does not offer it (or a path that strips the offer) would
 * otherwise get the password and every confirmation token in clear. Timeouts as the
 * tenants' mailer has them, so a stalled server does not hold sign-ups for minutes.
 */
export function signupTransport(url: string) {
  const parsed = new URL(url);
  const host = parsed.hostname.replace(/^\[|\]$/g, "");
  const secure = parsed.protocol === "smtps:";
  const loopback = host === "localhost" || host === "::1" || /^127\./.test(host);
  return {
    host,
    port: Number(parsed.port) || (secure ? 465 : 587),
    secure,
    requireTLS: !secure && !loopback,
    auth: parsed.username ? { user: decodeURIComponent(parsed.username), pass: decodeURIComponent(parsed.password) } : undefined,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 20_000,
  };
}
