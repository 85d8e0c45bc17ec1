import { badRequest } from "../core/errors.ts";
import { bestMatch, compilePattern, patternsOverlap, splitList, type CompiledPattern } from "../routing/patterns.ts";
import type { AccountRow, NewAccountRow } from "../store/store.ts";
import { DEFAULT_RESOURCES, resourcesOf } from "./access.ts";
import type { AccountInput } from "./input.ts";
import type { ModelLimits } from "../wire/accounts.ts";
import { MODEL_LIMIT_MEMBERS, RATE_FIELDS, SPEND_FIELDS, type RateField, type SpendField } from "../wire/constants.ts";
import { parseRange, rangeContains, type IpRange } from "./ip-ranges.ts";

/**
 * "Permissions granted can never exceed the caller's own available scope" (spec 2.2):
 * turns a checked body into the account columns to write, inheriting what a creation
 * omits from the caller and refusing anything beyond the caller's own limits. The
 * same rules hold for create, update and batch operations.
 */

const COLUMN: Record<RateField | SpendField, keyof AccountRow> = {
  RPM: "rpm",
  RPH: "rph",
  RPD: "rpd",
  TPM: "tpm",
  TPH: "tph",
  TPD: "tpd",
  DailyLimit: "dailyLimit",
  HardLimit: "hardLimit",
  SoftLimit: "softLimit",
};

const MEMBER_FIELD = { rpm: "RPM", rph: "RPH", rpd: "RPD", tpm: "TPM", tph: "TPH", tpd: "TPD" } as const;

function capOf(caller: AccountRow, field: RateField | SpendField): number | null {
  return caller.isOwner ? null : ((caller[COLUMN[field]] as number | null) ?? null);
}

function checkLimit(caller: AccountRow, field: RateField | SpendField, value: number | null): void {
  const cap = capOf(caller, field);
  if (cap === null) return;
  if (value === null) throw badRequest(`${field} cannot be unlimited: your own ${field} is ${cap}`, field);
  if (value > cap) throw badRequest(`${field} ${value} exceeds your own ${field} of ${cap}`, field);
}

function callerModelLimits(caller: AccountRow): ModelLimits {
  return caller.isOwner || !caller.modelLimits ? {} : (JSON.parse(caller.modelLimits) as ModelLimits);
}

function checkModelLimits(caller: AccountRow, limits: ModelLimits): void {
  if (caller.isOwner) return;
  const ownLimits = callerModelLimits(caller);
  // Without the caller's own entry, those models would be bound only by the child's
  // account-level limits, which may be above the caller's model limit.
  for (const [source, limit] of Object.entries(ownLimits)) {
    if (Object.keys(limit).length > 0 && !Object.hasOwn(limits, source)) {
      throw badRequest(`ModelLimits must keep your own entry "${source}" (with values not above yours)`, "ModelLimits");
    }
  }
  const own = Object.entries(ownLimits).map(([source, limit]) => ({ pattern: compilePattern(source), limit }));
  for (const [pattern, limit] of Object.entries(limits)) {
    // The caller's entry that would govern this pattern's models, read as a model name.
    const governing = bestMatch(own, pattern)?.limit;
    for (const member of MODEL_LIMIT_MEMBERS) {
      const modelCap = governing?.[member];
      const cap = modelCap ?? capOf(caller, MEMBER_FIELD[member]);
      const value = limit[member];
      if (cap === null || cap === undefined) continue;
      // Unset, the member falls back to the child's account-level limit: enough when the
      // caller's own cap is account-level too (the child's is never above it), not when
      // the caller has a model limit for it.
      if (value === undefined) {
        if (modelCap === undefined) continue;
        throw badRequest(`ModelLimits["${pattern}"].${member} must be set: your own limit for it is ${cap}`, "ModelLimits");
      }
      if (value > cap) throw badRequest(`ModelLimits["${pattern}"].${member} ${value} exceeds your own ${cap}`, "ModelLimits");
    }
    checkOverlaps(own, pattern, limit);
  }
}

/** Whether `a` wins over `b` for a model both match, or may (a tie goes to the earlier entry: either may be first). */
const mayWinOver = (a: CompiledPattern, b: CompiledPattern) => a.exact || (!b.exact && a.literals >= b.literals);
/** Whether `a` always wins over `b` for a model both match. */
const winsOver = (a: CompiledPattern, b: CompiledPattern) => (a.exact && !b.exact) || (!b.exact && a.literals > b.literals);

/**
 * A child's pattern read as a model name meets only the caller's entries that match that
 * text ("*pt-4o" is not a model "gpt-*" matches), yet for a real model both match (gpt-4o)
 * the child's more specific pattern governs, where the caller's entry (which the child
 * keeps a copy of) governed the caller. So each caller entry whose models overlap the
 * pattern's, and which the pattern may win over, bounds it too, unless another entry of
 * the caller covers all of the pattern's models and wins over that one (the caller's
 * limit there is that other entry's). A copy of a caller's entry governs the child's
 * models where the original governs the caller's: its own bound is enough.
 */
function checkOverlaps(own: ReadonlyArray<{ pattern: CompiledPattern; limit: ModelLimits[string] }>, pattern: string, limit: ModelLimits[string]): void {
  if (own.some((entry) => entry.pattern.source === pattern)) return;
  const compiled = compilePattern(pattern);
  for (const entry of own) {
    if (!mayWinOver(compiled, entry.pattern) || !patternsOverlap(pattern, entry.pattern.source)) continue;
    // A caller's entry covering every model of the pattern (read literally: its `*` then
    // stands in for any run) and winning over this one governs them for the caller instead.
    if (own.some((other) => other !== entry && other.pattern.test(pattern) && winsOver(other.pattern, entry.pattern))) continue;
    for (const member of MODEL_LIMIT_MEMBERS) {
      const cap = entry.limit[member];
      if (cap === undefined || cap === null) continue;
      const value = limit[member];
      if (value === undefined) throw badRequest(`ModelLimits["${pattern}"].${member} must be set: it covers models of your own entry "${entry.pattern.source}", whose ${member} is ${cap}`, "ModelLimits");
      if (value > cap) throw badRequest(`ModelLimits["${pattern}"].${member} ${value} exceeds ${cap}, the ${member} of your own entry "${entry.pattern.source}" for the models both cover`, "ModelLimits");
    }
  }
}

/** Each child pattern must be one the caller's own patterns cover (read literally). */
function checkPatterns(field: string, own: string | null, child: string | null): void {
  if (own === null) return;
  const ownPatterns = splitList(own).map(compilePattern);
  if (ownPatterns.length === 0) return;
  const entries = splitList(child);
  if (entries.length === 0) throw badRequest(`${field} cannot be unrestricted: yours is "${own}"`, field);
  for (const entry of entries) {
    if (!ownPatterns.some((p) => p.test(entry))) throw badRequest(`${field}: "${entry}" is outside your own ${field} "${own}"`, field);
  }
}

function checkIps(caller: AccountRow, child: string | null): void {
  if (caller.isOwner || !caller.allowIps) return;
  const own = splitList(caller.allowIps).map(parseRange).filter((r): r is IpRange => r !== undefined);
  if (own.length === 0) return;
  const entries = splitList(child);
  if (entries.length === 0) throw badRequest(`AllowIPs cannot be unrestricted: yours is "${caller.allowIps}"`, "AllowIPs");
  for (const entry of entries) {
    const range = parseRange(entry)!;
    if (!own.some((o) => rangeContains(o, range))) throw badRequest(`AllowIPs: "${entry}" is outside your own AllowIPs`, "AllowIPs");
  }
}

/** Default Resources of a new account: the least-privilege list, narrowed to what the caller itself may use. */
function defaultResources(caller: AccountRow): string {
  const own = resourcesOf(caller);
  if (own === null) return DEFAULT_RESOURCES;
  const patterns = splitList(own).map(compilePattern);
  return splitList(DEFAULT_RESOURCES)
    .filter((entry) => patterns.some((p) => p.test(entry)))
    .join(",");
}

/** Columns for a new child of `caller`. */
export function columnsForCreate(caller: AccountRow, input: AccountInput): Partial<NewAccountRow> {
  const columns: Partial<NewAccountRow> = {};
  const rates = input.rates ?? caller.rates;
  if (rates < caller.rates) throw badRequest(`Rates ${rates} is below your own multiplier ${caller.rates}`, "Rates");
  columns.rates = rates;
  for (const field of [...RATE_FIELDS, ...SPEND_FIELDS]) {
    const value = field in input.limits ? (input.limits[field] ?? null) : capOf(caller, field);
    checkLimit(caller, field, value);
    (columns as Record<string, unknown>)[COLUMN[field]] = value;
  }
  const modelLimits = input.modelLimits === undefined ? callerModelLimits(caller) : (input.modelLimits ?? {});
  checkModelLimits(caller, modelLimits);
  columns.modelLimits = Object.keys(modelLimits).length ? JSON.stringify(modelLimits) : null;
  const allowModels = input.allowModels === undefined ? (caller.isOwner ? null : caller.allowModels) : input.allowModels;
  checkPatterns("AllowModels", caller.isOwner ? null : caller.allowModels, allowModels || null);
  columns.allowModels = allowModels || null;
  const allowIps = input.allowIps === undefined ? (caller.isOwner ? null : caller.allowIps) : input.allowIps;
  checkIps(caller, allowIps || null);
  columns.allowIps = allowIps || null;
  const resources = input.resources === undefined || input.resources === null ? defaultResources(caller) : input.resources;
  checkPatterns("Resources", resourcesOf(caller), resources);
  columns.resources = resources;
  return columns;
}

/** Columns changed by an update made by `caller`; only fields present in the body. */
export function columnsForUpdate(caller: AccountRow, input: AccountInput): Partial<NewAccountRow> {
  const columns: Partial<NewAccountRow> = {};
  if (input.rates !== undefined) {
    if (input.rates < caller.rates) throw badRequest(`Rates ${input.rates} is below your own multiplier ${caller.rates}`, "Rates");
    columns.rates = input.rates;
  }
  for (const field of [...RATE_FIELDS, ...SPEND_FIELDS]) {
    if (!(field in input.limits)) continue;
    const value = input.limits[field] ?? null;
    checkLimit(caller, field, value);
    (columns as Record<string, unknown>)[COLUMN[field]] = value;
  }
  if (input.modelLimits !== undefined) {
    const limits = input.modelLimits ?? {};
    checkModelLimits(caller, limits);
    columns.modelLimits = Object.keys(limits).length ? JSON.stringify(limits) : null;
  }
  if (input.allowModels !== undefined) {
    checkPatterns("AllowModels", caller.isOwner ? null : caller.allowModels, input.allowModels || null);
    columns.allowModels = input.allowModels || null;
  }
  if (input.allowIps !== undefined) {
    checkIps(caller, input.allowIps || null);
    columns.allowIps = input.allowIps || null;
  }
  if (input.resources !== undefined) {
    const resources = input.resources || defaultResources(caller);
    checkPatterns("Resources", resourcesOf(caller), resources);
    columns.resources = resources;
  }
  if (input.alias !== undefined) columns.alias = input.alias;
  if (input.billingEmail !== undefined) columns.billingEmail = input.billingEmail;
  if (input.name !== undefined) columns.name = input.name;
  if (input.email !== undefined) columns.email = input.email;
  return columns;
}
