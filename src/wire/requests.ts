/** The request log on the wire (`GET /x-requests`, `GET /x-requests/{request_id}`). */
import { Type, type Static } from "@sinclair/typebox";
import { Count, Credits, Instant, Nullable } from "./common.ts";

/** One upstream attempt of a call. Shown to a manager, it has no key id or name. */
export const RequestAttempt = Type.Object({
  key_id: Type.Optional(Count()),
  key_name: Type.Optional(Type.String()),
  level: Count(),
  /** The upstream's HTTP status; null when none arrived. */
  status: Nullable(Count()),
  /** Why it failed: status, timeout, refused, network, blocked, non_answer, client_closed; null when it did not. */
  error: Nullable(Type.String()),
  /** What the upstream or the connection said, redacted (never a secret) and cut to 500 characters. */
  message: Nullable(Type.String()),
  duration_ms: Count(),
  /** This attempt's answer went to the client. */
  answered: Type.Boolean(),
  /** The wire format the call was translated to for this key (openai-chat, openai-responses, anthropic-messages, gemini-generate); null when the key spoke the client's. */
  translated_to: Nullable(Type.String()),
});
export type RequestAttempt = Static<typeof RequestAttempt>;

/** One model call: who, what, how it was served and what it used. No request or response body. */
export const RequestRecord = Type.Object({
  request_id: Type.String({ description: "the X-Request-Id the router returned" }),
  time: Instant(),
  account: Type.Object({ id: Count(), name: Nullable(Type.String()), email: Nullable(Type.String()) }),
  family: Type.String(),
  endpoint: Type.String(),
  requested_model: Nullable(Type.String()),
  effective_model: Nullable(Type.String()),
  stream: Type.Boolean(),
  status: Count(),
  error: Nullable(
    Type.String({
      description:
        "why the router itself refused the call before its first upstream attempt: its error body's code (rpm_limit_reached, insufficient_credit, model_not_allowed, ip_not_allowed, …) or type (invalid_request, …); null when the call went upstream (its attempts say how it ended)",
    }),
  ),
  attempts: Type.Array(RequestAttempt),
  ttfb_ms: Nullable(Count()),
  duration_ms: Count(),
  tokens: Type.Object({ prompt: Count(), completion: Count(), cache_read: Count(), cache_write: Count(), reasoning: Count() }),
  cost: Credits(),
  /** `upstream` when the provider reported the counts, `estimated` when the router counted them, `none` for a call refused before its first attempt. */
  source: Type.String({ description: "upstream (the provider reported the token counts), estimated (the router counted them), none (refused before its first upstream attempt: no tokens, no cost)" }),
  client_ip: Nullable(Type.String()),
  user_agent: Nullable(Type.String()),
});
export type RequestRecord = Static<typeof RequestRecord>;
