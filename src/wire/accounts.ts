/**
 * Accounts on the wire (spec 2.2, 4.2): the creation/update body of `/x-users`, the
 * batch-credit body, and the records management answers with. A record uses the
 * body's field names, so a record read back can be sent again as an update.
 */
import { Type, type Static, type TSchema } from "@sinclair/typebox";
import { Count, Credits, Instant, Nullable, Text } from "./common.ts";
import { MAX_CREDIT_CHANGE, MAX_RATES, MAX_SPEND_LIMIT, MODEL_LIMIT_MEMBERS, RATE_FIELDS, SPEND_FIELDS } from "./constants.ts";

/** `{ [field]: schema }` for each of a constant list of field names. */
function fieldsOf<K extends string, T extends TSchema>(names: readonly K[], schema: () => T): Record<K, T> {
  return Object.fromEntries(names.map((name) => [name, schema()])) as Record<K, T>;
}

/**
 * The longest validity of added credit: a hundred years. Further, an expiry past the
 * largest date a clock can hold made every read of the account's credit fail.
 */
export const MAX_CREDIT_DAYS = 36_500;

/** One ModelLimits entry: some of rpm..tpd, each a non-negative integer; nothing else. */
export const ModelLimit = Type.Partial(Type.Object(fieldsOf(MODEL_LIMIT_MEMBERS, () => Count())), {
  additionalProperties: false,
  expected: `an object of ${MODEL_LIMIT_MEMBERS.join(", ")}`,
});
export type ModelLimit = Static<typeof ModelLimit>;

/** Model pattern → limits for the models it matches. */
export const ModelLimits = Type.Record(Type.String(), ModelLimit, { expected: "an object of model pattern → limits" });
export type ModelLimits = Static<typeof ModelLimits>;

/** Rate limits are counts; spend limits credits up to MAX_SPEND_LIMIT. `null` is "unlimited". */
const RateLimits = fieldsOf(RATE_FIELDS, () => Nullable(Count()));
const SpendLimits = fieldsOf(SPEND_FIELDS, () => Nullable(Credits({ minimum: 0, maximum: MAX_SPEND_LIMIT, unit: "credits" })));

/**
 * `POST /x-users` and `PUT /x-users/:id`: every field optional (creation requires
 * Email, which the service checks, so the message can say what creation needs). In an
 * update `null` clears a field that has no value by default; absent leaves it as is.
 * Declared in the order the fields are checked.
 */
export const AccountBody = Type.Object(
  {
    Email: Type.Optional(Text({ maxLength: 254 })),
    Name: Type.Optional(Text({ maxLength: 63, description: "4 to 63 characters with at least one letter, without @, /, \\, control characters or spaces at either end; generated when absent" })),
    Alias: Type.Optional(Nullable(Text({ maxLength: 100 }))),
    BillingEmail: Type.Optional(Nullable(Text({ maxLength: 254 }))),
    Rates: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: MAX_RATES })),
    ...Type.Partial(Type.Object(RateLimits)).properties,
    ...Type.Partial(Type.Object(SpendLimits)).properties,
    ModelLimits: Type.Optional(Nullable(ModelLimits)),
    AllowIPs: Type.Optional(Nullable(Text({ maxLength: 4000 }))),
    AllowModels: Type.Optional(Nullable(Text({ maxLength: 4000 }))),
    Resources: Type.Optional(Nullable(Text({ maxLength: 4000 }))),
    /** Credit to add (positive) or deduct (negative). */
    CreditGranted: Type.Optional(Nullable(Credits({ minimum: -MAX_CREDIT_CHANGE, maximum: MAX_CREDIT_CHANGE, unit: "credits per change" }))),
    /** Validity in days of added credit. */
    Days: Type.Optional(Nullable(Count({ minimum: 1, maximum: MAX_CREDIT_DAYS, expected: `a number of days from 1 to ${MAX_CREDIT_DAYS}` }))),
  },
  { additionalProperties: false },
);
export type AccountBody = Static<typeof AccountBody>;

/**
 * `POST /x-users`: the same fields, but Email is required (spec 2.2) and the credit
 * granted at creation cannot be a deduction, as the account has none to take from.
 */
export const AccountCreateBody = Type.Object(
  {
    ...AccountBody.properties,
    Email: Text({ maxLength: 254 }),
    CreditGranted: Type.Optional(
      Nullable(Credits({ minimum: 0, maximum: MAX_CREDIT_CHANGE, expected: `a number of credits from 0 to ${MAX_CREDIT_CHANGE} when creating an account` })),
    ),
  },
  { additionalProperties: false },
);
export type AccountCreateBody = Static<typeof AccountCreateBody>;

/** `POST /x-users/batch-credit`: one credit change applied to each listed account. */
export const BatchCreditBody = Type.Object(
  {
    /**
     * Integers; one that can name no account (0, negative) is a skipped entry like an
     * unknown ID (spec 7.4: entries that cannot be applied are skipped, not a request error).
     */
    IDs: Type.Array(Type.Integer({ minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER, expected: "an account ID" }), {
      minItems: 1,
      maxItems: 1000,
      expected: "an array of 1 to 1000 account IDs",
    }),
    /** Non-zero (checked by the domain, after rounding to nano-credits). */
    CreditGranted: Credits({
      minimum: -MAX_CREDIT_CHANGE,
      maximum: MAX_CREDIT_CHANGE,
      unit: "credits per change",
      description: "non-zero once rounded to 10^-9 credits: positive adds, negative deducts",
    }),
    Days: Type.Optional(Nullable(Count({ minimum: 1, maximum: MAX_CREDIT_DAYS, expected: `a number of days from 1 to ${MAX_CREDIT_DAYS}` }))),
    DryRun: Type.Optional(Nullable(Type.Boolean())),
  },
  { additionalProperties: false },
);
export type BatchCreditBody = Static<typeof BatchCreditBody>;

/**
 * An account in the body's field names, plus the identity in the lower-case names the
 * specification gives account records (those of the usage ranking, `id`, `name`,
 * `alias`, `email`, and the `level` of the list filters; spec 2.2, 2.3), the names
 * `/dashboard/status` uses too. Never the key or its hash.
 */
export const AccountRecord = Type.Object({
  id: Count(),
  name: Type.String(),
  email: Type.String(),
  alias: Nullable(Type.String()),
  /** Depth in the tree, as `Level`. */
  level: Count(),
  ID: Count(),
  Name: Type.String(),
  Email: Type.String(),
  Alias: Nullable(Type.String()),
  BillingEmail: Nullable(Type.String()),
  ParentID: Nullable(Count()),
  /** Depth in the tree: owners are 1. */
  Level: Count(),
  IsOwner: Type.Boolean(),
  Rates: Type.Number(),
  ...RateLimits,
  ...SpendLimits,
  ModelLimits,
  AllowIPs: Type.String(),
  AllowModels: Type.String(),
  Resources: Type.String(),
  /** The first characters of the API key, to tell keys apart. */
  KeyPrefix: Type.String(),
  CreatedAt: Instant(),
  UpdatedAt: Instant(),
});
export type AccountRecord = Static<typeof AccountRecord>;

/** The limits part of a record: what an account may use. */
export const AccountLimits = Type.Pick(AccountRecord, [...RATE_FIELDS, ...SPEND_FIELDS, "ModelLimits"]);
export type AccountLimits = Static<typeof AccountLimits>;

/** `/x-users` and `/x-dna` answers: the record with its balance. */
export const ManagedAccount = Type.Composite([Type.Object({ object: Type.Literal("account") }), AccountRecord, Type.Object({ Balance: Credits() })]);
export type ManagedAccount = Static<typeof ManagedAccount>;

/** `POST /x-users`: the new account and its API key, shown this once. */
export const CreatedAccount = Type.Composite([ManagedAccount, Type.Object({ APIKey: Type.String() })]);
export type CreatedAccount = Static<typeof CreatedAccount>;

/** `GET /dashboard/info`: the caller's own record. */
export const AccountInfo = Type.Composite([Type.Object({ object: Type.Literal("account_info") }), AccountRecord]);
export type AccountInfo = Static<typeof AccountInfo>;

/** `DELETE /x-users/:id`: the remaining credit goes back to the parent. */
export const AccountDeleted = Type.Object({ object: Type.Literal("account"), ID: Count(), deleted: Type.Literal(true), CreditReturned: Credits() });
export type AccountDeleted = Static<typeof AccountDeleted>;

/** `POST /x-self`: the rotation's confirmation, which the service holds to today's server date. */
export const RotateSelfBody = Type.Object(
  { confirm: Type.String({ description: "YYYY-MM-DD-ROTATE-SELF with the server's date", expected: "<YYYY-MM-DD>-ROTATE-SELF with today's server date" }) },
  { additionalProperties: false },
);
export type RotateSelfBody = Static<typeof RotateSelfBody>;

/** `POST /x-self`: the caller's new API key. */
export const RotatedKey = Type.Object({ object: Type.Literal("api_key"), ID: Count(), APIKey: Type.String(), KeyPrefix: Type.String() });
export type RotatedKey = Static<typeof RotatedKey>;

/** `GET /dashboard/status`: who the caller is and whether it may manage accounts. */
export const AccountStatus = Type.Object({
  object: Type.Literal("account_status"),
  id: Count(),
  name: Type.String(),
  email: Type.String(),
  alias: Nullable(Type.String()),
  isOwner: Type.Boolean(),
  level: Count(),
  balance: Credits(),
  manage: Type.Boolean(),
  timeZone: Type.String({ description: "the router's business time zone (IANA name): business days, RPD/TPD and bills follow it" }),
});
export type AccountStatus = Static<typeof AccountStatus>;

/** `GET /dashboard/credit`: the caller's balance and the credit grants it is made of. */
export const CreditReport = Type.Object({
  object: Type.Literal("credit"),
  balance: Credits(),
  grants: Type.Array(Type.Object({ amount: Credits(), remaining: Credits(), expires_at: Nullable(Instant()), created_at: Instant() })),
});
export type CreditReport = Static<typeof CreditReport>;

/** One entry of a batch-credit answer: applied (with the balances) or skipped (with the reason). */
export const BatchEntryResult = Type.Object({
  ID: Count(),
  status: Type.Union([Type.Literal("applied"), Type.Literal("skipped")]),
  reason: Type.Optional(Type.String()),
  BalanceBefore: Type.Optional(Credits()),
  BalanceAfter: Type.Optional(Credits()),
});
export type BatchEntryResult = Static<typeof BatchEntryResult>;

/** `POST /x-users/batch-credit`: what was (or, in a dry run, would be) applied or skipped. */
export const BatchResult = Type.Object({
  object: Type.Literal("batch_credit"),
  DryRun: Type.Boolean(),
  results: Type.Array(BatchEntryResult),
  summary: Type.Object({
    applied: Count(),
    skipped: Count(),
    ParentCreditChange: Credits(),
    ChildrenCreditChange: Credits(),
  }),
});
export type BatchResult = Static<typeof BatchResult>;
