import { Elysia } from "elysia";
import { createHash, randomBytes } from "node:crypto";
import type { Owners } from "../accounts/owners.ts";
import { isValidEmail, normaliseEmail } from "../accounts/validation.ts";
import type { OperationLog } from "../admin/oplog/writer.ts";
import type { ServeConfig } from "../config.ts";
import type { Clock } from "../core/clock.ts";
import { badRequest, HttpError, notFound } from "../core/errors.ts";
import { onlyFields, readJsonObject } from "../http/body.ts";
import { clientIp } from "../http/client-ip.ts";
import type { State, WindowCounter } from "../state/state.ts";

/** Sign-ups allowed per client address and hour. */
export const SIGNUPS_PER_IP_HOUR = 5;
/** How long a mailed confirmation link stays valid. */
const CONFIRM_TTL_MS = 24 * 3_600_000;
const HOUR_MS = 3_600_000;

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
  const transport = smtp ? import("nodemailer").then((m) => m.default.createTransport(smtp)) : undefined;

  /** Counts a sign-up of the client's address, or refuses past the hourly limit. */
  const limit = async (request: Request) => {
    const ip = clientIp(request, deps.config.trustProxy) ?? "unknown";
    const counter: WindowCounter = { kind: "window", key: `signup:${ip}`, windowMs: HOUR_MS };
    const verdict = await deps.state.counts.admit([{ counter, limit: SIGNUPS_PER_IP_HOUR, add: 1 }], deps.clock.now());
    if (!verdict.admitted) {
      throw new HttpError("rate_limit", "Too many sign-ups from this address; try again later", {
        code: "signup_rate_limited",
        headers: { "retry-after": String(Math.max(1, Math.ceil(verdict.refusal.retryAfterMs / 1000))) },
      });
    }
  };

  const create = async (email: string, name: string | undefined) => {
    const { account, key } = await deps.owners.create({ email, name });
    await deps.oplog.write({ actorId: account.id, tenantId: account.id, action: "tenant.signup", targetId: account.id, details: { email: account.email } });
    return { object: "signup", ID: account.id, Email: account.email, Name: account.name, APIKey: key };
  };

  return new Elysia()
    .post(
      "/x-signup",
      async ({ request, set }) => {
        const body = await readJsonObject(request, deps.config.maxBody);
        onlyFields(body, ["Email", "Name"]);
        const email = typeof body.Email === "string" ? normaliseEmail(body.Email) : "";
        if (!isValidEmail(email)) throw badRequest("Email is required and must be a valid address", "Email");
        const name = typeof body.Name === "string" ? body.Name : undefined;
        await limit(request);
        if (!transport) {
          set.status = 201;
          return create(email, name);
        }
        const token = randomBytes(24).toString("base64url");
        await deps.state.signups.put(hash(token), { email, name }, CONFIRM_TTL_MS, deps.clock.now());
        await (await transport).sendMail({
          from: deps.config.signupFrom ?? "router@localhost",
          to: email,
          subject: "Confirm your router account",
          text: `To create your account, send this token to POST /x-signup/confirm as {"token":"${token}"}. It is valid for 24 hours.`,
        });
        set.status = 202;
        return { object: "signup", status: "confirmation_sent", Email: email };
      },
      { parse: "none" },
    )
    .post(
      "/x-signup/confirm",
      async ({ request, set }) => {
        const body = await readJsonObject(request, deps.config.maxBody);
        onlyFields(body, ["token"]);
        const token = typeof body.token === "string" ? body.token : "";
        // Taken once: a second confirmation with the same token finds nothing.
        const entry = await deps.state.signups.take(hash(token), deps.clock.now());
        if (!entry) throw notFound("Unknown or expired confirmation token", "signup_token_invalid");
        set.status = 201;
        return create(entry.email, entry.name);
      },
      { parse: "none" },
    );
}
