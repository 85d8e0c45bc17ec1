import { badRequest } from "../core/errors.ts";
import { splitList } from "../routing/patterns.ts";
import { parseRange } from "./ip-ranges.ts";
import { ACCOUNT_NAME_RULE, ALIAS_RULE, isValidAccountName, isValidAlias, isValidEmail, normaliseEmail } from "./validation.ts";
import { AccountBody, AccountCreateBody, type ModelLimit, type ModelLimits } from "../wire/accounts.ts";
import { bodyCheck, type FieldRules } from "../wire/check.ts";
import { MODEL_LIMIT_MEMBERS, RATE_FIELDS, SPEND_FIELDS, type ModelLimitMember, type RateField, type SpendField } from "../wire/constants.ts";

/** A creation or update body, checked field by field (spec 2.2). Absent fields are undefined; `null` clears. */
export interface AccountInput {
  email?: string;
  name?: string;
  alias?: string | null;
  billingEmail?: string | null;
  rates?: number;
  limits: Partial<Record<RateField | SpendField, number | null>>;
  modelLimits?: ModelLimits | null;
  allowIps?: string | null;
  allowModels?: string | null;
  resources?: string | null;
  /** Credit to add (positive) or deduct (negative), in credits. */
  credit?: number;
  /** Validity in days of added credit. */
  days?: number;
}

/** A comma-separated list with each entry checked; kept normalised (trimmed, joined by commas). */
function list(value: string | null | undefined, field: string, check: (entry: string) => boolean, what: string): string | null | undefined {
  if (value === undefined || value === null) return value;
  const entries = splitList(value);
  for (const entry of entries) {
    if (!check(entry)) throw badRequest(`${field}: "${entry}" is not ${what}`, field);
  }
  return entries.join(",");
}

/**
 * Model pattern → {rpm..tpd} non-negative integers; unknown members refused. `field` names
 * the setting in errors. The MODEL_LIMITS configuration item arrives unchecked, hence the
 * structural checks; for an account body they already passed, and this adds the pattern
 * rule and trims the patterns.
 */
export function parseModelLimits(value: unknown, field = "ModelLimits"): ModelLimits | null | undefined {
  if (value === undefined || value === null) return value;
  if (typeof value !== "object" || Array.isArray(value)) throw badRequest(`${field} must be an object of model pattern → limits`, field);
  // No prototype: a model may be named "__proto__", which an ordinary object would swallow.
  const out: ModelLimits = Object.create(null);
  for (const [pattern, limits] of Object.entries(value as Record<string, unknown>)) {
    if (!pattern.trim()) throw badRequest(`${field}: an empty model pattern`, field);
    if (limits === null || typeof limits !== "object" || Array.isArray(limits)) {
      throw badRequest(`${field}["${pattern}"] must be an object of rpm, rph, rpd, tpm, tph, tpd`, field);
    }
    const entry: ModelLimit = {};
    for (const [given, n] of Object.entries(limits as Record<string, unknown>)) {
      // Spec 2.4 names MODEL_LIMITS' members RPM, RPD…, section 8 rpm, rpd…: either
      // spelling is read (an account's ModelLimits is held to the lower case by its model).
      const member = given.toLowerCase();
      if (!(MODEL_LIMIT_MEMBERS as readonly string[]).includes(member)) {
        throw badRequest(`${field}["${pattern}"]: unknown member "${given}" (allowed: ${MODEL_LIMIT_MEMBERS.join(", ")})`, field);
      }
      if (member in entry) throw badRequest(`${field}["${pattern}"]: ${member} is given twice`, field);
      if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0) {
        throw badRequest(`${field}["${pattern}"].${given} must be a non-negative integer`, field);
      }
      entry[member as ModelLimitMember] = n;
    }
    out[pattern.trim()] = entry;
  }
  return out;
}

/** A path pattern for Resources: starts with `/` (or is `*`), no spaces. */
const isPathPattern = (entry: string) => /^(\*|\/[^\s,]*)$/.test(entry);
const isModelPattern = (entry: string) => /^[^\s,]+$/.test(entry);

/**
 * The body's types, lengths, ranges and unknown fields are its wire model's
 * (src/wire/accounts.ts); these are the rules of single fields a schema cannot state,
 * run in the model's field order. The caller-relative rules are `scope.ts`'s.
 */
const ACCOUNT_RULES: FieldRules<typeof AccountBody> = {
  Email: (email) => {
    if (!isValidEmail(normaliseEmail(email))) throw badRequest(`Email "${email}" is not a valid address`, "Email");
  },
  Name: (name) => {
    if (!isValidAccountName(name)) throw badRequest(ACCOUNT_NAME_RULE, "Name");
  },
  Alias: (alias) => {
    if (alias !== null && !isValidAlias(alias)) throw badRequest(ALIAS_RULE, "Alias");
  },
  BillingEmail: (billing) => {
    // "" and null both mean "the account's own email".
    if (billing && !isValidEmail(normaliseEmail(billing))) throw badRequest(`BillingEmail "${billing}" is not a valid address`, "BillingEmail");
  },
  ModelLimits: (limits) => void parseModelLimits(limits),
  AllowIPs: (value) => void allowIps(value),
  AllowModels: (value) => void allowModels(value),
  Resources: (value) => void resources(value),
};
const checkAccountBody = bodyCheck(AccountBody, { rules: ACCOUNT_RULES });
/** Creation's model (Email required, no deduction) with the same field rules: the one `/openapi.json` publishes for it. */
const checkCreateBody = bodyCheck(AccountCreateBody, { rules: ACCOUNT_RULES as FieldRules<typeof AccountCreateBody> });

const allowIps = (value: string | null | undefined) => list(value, "AllowIPs", (e) => parseRange(e) !== undefined, "an IP address or CIDR range");
const allowModels = (value: string | null | undefined) => list(value, "AllowModels", isModelPattern, "a model pattern");
const resources = (value: string | null | undefined) => list(value, "Resources", isPathPattern, "an API path pattern (starting with /)");

/** Reads an account body (creation and update accept the same fields) into the service's input, normalised. */
export function readAccountInput(raw: Record<string, unknown>, use: "create" | "update" = "update"): AccountInput {
  const body = use === "create" ? checkCreateBody(raw) : checkAccountBody(raw);
  const input: AccountInput = { limits: {} };
  if (body.Email !== undefined) input.email = normaliseEmail(body.Email);
  if (body.Name !== undefined) input.name = body.Name;
  input.alias = body.Alias;
  input.billingEmail = body.BillingEmail ? normaliseEmail(body.BillingEmail) : body.BillingEmail;
  input.rates = body.Rates;
  for (const field of [...RATE_FIELDS, ...SPEND_FIELDS]) if (body[field] !== undefined) input.limits[field] = body[field];
  input.modelLimits = parseModelLimits(body.ModelLimits);
  input.allowIps = allowIps(body.AllowIPs);
  input.allowModels = allowModels(body.AllowModels);
  input.resources = resources(body.Resources);
  if (body.CreditGranted !== undefined && body.CreditGranted !== null) input.credit = body.CreditGranted;
  if (body.Days !== undefined && body.Days !== null) input.days = body.Days;
  return input;
}
