import { badRequest } from "../core/errors.ts";
import { splitList } from "../routing/patterns.ts";
import { parseRange } from "./ip-ranges.ts";
import { isValidAccountName, isValidEmail, normaliseEmail } from "./validation.ts";

export const RATE_FIELDS = ["RPM", "RPH", "RPD", "TPM", "TPH", "TPD"] as const;
export const SPEND_FIELDS = ["DailyLimit", "HardLimit", "SoftLimit"] as const;
export type RateField = (typeof RATE_FIELDS)[number];
export type SpendField = (typeof SPEND_FIELDS)[number];
export const MODEL_LIMIT_MEMBERS = ["rpm", "rph", "rpd", "tpm", "tph", "tpd"] as const;
export type ModelLimitMember = (typeof MODEL_LIMIT_MEMBERS)[number];
export type ModelLimit = Partial<Record<ModelLimitMember, number>>;
export type ModelLimits = Record<string, ModelLimit>;

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

const CREATE_FIELDS = new Set([
  "Email", "Name", "CreditGranted", "Alias", "BillingEmail", "Rates", ...RATE_FIELDS, ...SPEND_FIELDS,
  "ModelLimits", "Days", "AllowIPs", "AllowModels", "Resources",
]);

function text(body: Record<string, unknown>, field: string, max = 200): string | null | undefined {
  const value = body[field];
  if (value === undefined || value === null) return value;
  if (typeof value !== "string") throw badRequest(`${field} must be a string`, field);
  if (value.length > max) throw badRequest(`${field} must be at most ${max} characters`, field);
  return value;
}

/** Largest Rates multiplier: with prices at most MAX_PRICE, costs stay exact integers of nano-credits. */
export const MAX_RATES = 1000;
/** Largest spend limit (credits): in nano-credits still an exact integer. */
export const MAX_SPEND_LIMIT = 1e6;

function number(body: Record<string, unknown>, field: string, integer: boolean): number | null | undefined {
  const value = body[field];
  if (value === undefined || value === null) return value;
  if (typeof value !== "number" || !Number.isFinite(value)) throw badRequest(`${field} must be a finite number`, field);
  if (integer && !Number.isSafeInteger(value)) throw badRequest(`${field} must be an integer`, field);
  if (value < 0) throw badRequest(`${field} must not be negative`, field);
  return value;
}

function list(body: Record<string, unknown>, field: string, check: (entry: string) => boolean, what: string): string | null | undefined {
  const value = text(body, field, 4000);
  if (value === undefined || value === null) return value;
  const entries = splitList(value);
  for (const entry of entries) {
    if (!check(entry)) throw badRequest(`${field}: "${entry}" is not ${what}`, field);
  }
  return entries.join(",");
}

/** Model pattern → {rpm..tpd} non-negative integers; unknown members refused. `field` names the setting in errors. */
export function parseModelLimits(value: unknown, field = "ModelLimits"): ModelLimits | null | undefined {
  if (value === undefined || value === null) return value;
  if (typeof value !== "object" || Array.isArray(value)) throw badRequest(`${field} must be an object of model pattern → limits`, field);
  const out: ModelLimits = {};
  for (const [pattern, limits] of Object.entries(value as Record<string, unknown>)) {
    if (!pattern.trim()) throw badRequest(`${field}: an empty model pattern`, field);
    if (limits === null || typeof limits !== "object" || Array.isArray(limits)) {
      throw badRequest(`${field}["${pattern}"] must be an object of rpm, rph, rpd, tpm, tph, tpd`, field);
    }
    const entry: ModelLimit = {};
    for (const [member, n] of Object.entries(limits as Record<string, unknown>)) {
      if (!(MODEL_LIMIT_MEMBERS as readonly string[]).includes(member)) {
        throw badRequest(`${field}["${pattern}"]: unknown member "${member}" (allowed: ${MODEL_LIMIT_MEMBERS.join(", ")})`, field);
      }
      if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0) {
        throw badRequest(`${field}["${pattern}"].${member} must be a non-negative integer`, field);
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

/** Reads an account body; `update` also accepts the update-only fields (they are accepted at creation too). */
export function readAccountInput(body: Record<string, unknown>): AccountInput {
  for (const field of Object.keys(body)) {
    if (!CREATE_FIELDS.has(field)) throw badRequest(`Unknown field ${field}`, field);
  }
  const input: AccountInput = { limits: {} };
  const email = text(body, "Email", 254);
  if (email !== undefined) {
    if (email === null || !isValidEmail(normaliseEmail(email))) throw badRequest(`Email "${email}" is not a valid address`, "Email");
    input.email = normaliseEmail(email);
  }
  const name = text(body, "Name", 63);
  if (name !== undefined) {
    if (name === null || !isValidAccountName(name)) {
      throw badRequest("Name must be 4 to 63 characters (letters, digits, . _ -) with at least one letter", "Name");
    }
    input.name = name;
  }
  input.alias = text(body, "Alias", 100);
  const billing = text(body, "BillingEmail", 254);
  if (billing) {
    if (!isValidEmail(normaliseEmail(billing))) throw badRequest(`BillingEmail "${billing}" is not a valid address`, "BillingEmail");
    input.billingEmail = normaliseEmail(billing);
  } else input.billingEmail = billing;
  const rates = number(body, "Rates", false);
  if (rates === null) throw badRequest("Rates must be a number", "Rates");
  if (rates !== undefined) {
    if (rates <= 0) throw badRequest("Rates must be greater than 0", "Rates");
    if (rates > MAX_RATES) throw badRequest(`Rates must be at most ${MAX_RATES}`, "Rates");
    input.rates = rates;
  }
  for (const field of RATE_FIELDS) if (body[field] !== undefined) input.limits[field] = number(body, field, true) ?? null;
  for (const field of SPEND_FIELDS) {
    if (body[field] === undefined) continue;
    const limit = number(body, field, false) ?? null;
    if (limit !== null && limit > MAX_SPEND_LIMIT) throw badRequest(`${field} must be at most ${MAX_SPEND_LIMIT} credits`, field);
    input.limits[field] = limit;
  }
  input.modelLimits = parseModelLimits(body.ModelLimits);
  input.allowIps = list(body, "AllowIPs", (e) => parseRange(e) !== undefined, "an IP address or CIDR range");
  input.allowModels = list(body, "AllowModels", isModelPattern, "a model pattern");
  input.resources = list(body, "Resources", isPathPattern, "an API path pattern (starting with /)");
  const credit = body.CreditGranted;
  if (credit !== undefined && credit !== null) {
    if (typeof credit !== "number" || !Number.isFinite(credit)) throw badRequest("CreditGranted must be a finite number", "CreditGranted");
    if (Math.abs(credit) > 1e6) throw badRequest("CreditGranted must be at most 1,000,000 credits per change", "CreditGranted");
    input.credit = credit;
  }
  const days = number(body, "Days", true);
  if (days !== undefined && days !== null) {
    if (days < 1) throw badRequest("Days must be a positive integer", "Days");
    input.days = days;
  }
  return input;
}
