/** Sign-up on the wire (BYOK with `--signup`; docs/api.md, "Sign-up"): no key, a new tenant's owner. */
import { Type, type Static } from "@sinclair/typebox";
import { Count, Text } from "./common.ts";

/** `POST /x-signup`. The address and the name are also checked by the domain's rules (a valid address, a valid account name). */
export const SignupBody = Type.Object(
  {
    Email: Text({ maxLength: 254, expected: "a valid email address" }),
    Name: Type.Optional(Text({ maxLength: 63, description: "4 to 63 characters with a letter; generated when absent" })),
  },
  { additionalProperties: false },
);
export type SignupBody = Static<typeof SignupBody>;

/** `POST /x-signup/confirm`: the token mailed to the address. */
export const SignupConfirmBody = Type.Object({ token: Type.String() }, { additionalProperties: false });
export type SignupConfirmBody = Static<typeof SignupConfirmBody>;

/** The new owner and its API key, shown this once. */
export const SignupCreated = Type.Object({ object: Type.Literal("signup"), ID: Count(), Email: Type.String(), Name: Type.String(), APIKey: Type.String() });
export type SignupCreated = Static<typeof SignupCreated>;

/** With `--signup-smtp`: a token was mailed; the same answer whether or not the address already owns a tenant. */
export const SignupPending = Type.Object({ object: Type.Literal("signup"), status: Type.Literal("confirmation_sent"), Email: Type.String() });
export type SignupPending = Static<typeof SignupPending>;
