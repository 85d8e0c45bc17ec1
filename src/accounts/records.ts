import type { AccountRow } from "../store/store.ts";
import type { AccountLimits, AccountRecord, ModelLimits } from "../wire/accounts.ts";
import { resourcesOf } from "./access.ts";

export const NANOS_PER_CREDIT = 1_000_000_000;

export function nanosToCredits(nanos: number): number {
  return nanos / NANOS_PER_CREDIT;
}

/** The account's limits, in the field names of the creation body (spec 2.2), null when unlimited. */
export function limitsRecord(account: AccountRow): AccountLimits {
  return {
    RPM: account.rpm,
    RPH: account.rph,
    RPD: account.rpd,
    TPM: account.tpm,
    TPH: account.tph,
    TPD: account.tpd,
    DailyLimit: account.dailyLimit,
    HardLimit: account.hardLimit,
    SoftLimit: account.softLimit,
    ModelLimits: account.modelLimits ? (JSON.parse(account.modelLimits) as ModelLimits) : {},
  };
}

/**
 * An account as management responses show it: the creation/update field names, so
 * a record's settings read back can be sent again as an update, and the identity in
 * the lower-case names the specification gives account records (spec 2.2: those of
 * the usage ranking, and `level`). Never the key or its hash.
 */
export function accountRecord(account: AccountRow): AccountRecord {
  return {
    id: account.id,
    name: account.name,
    email: account.email,
    alias: account.alias,
    level: account.depth,
    ID: account.id,
    Name: account.name,
    Email: account.email,
    Alias: account.alias,
    BillingEmail: account.billingEmail,
    ParentID: account.parentId,
    Level: account.depth,
    IsOwner: account.isOwner,
    Rates: account.rates,
    ...limitsRecord(account),
    AllowIPs: account.allowIps ?? "",
    AllowModels: account.allowModels ?? "",
    Resources: resourcesOf(account) ?? "*",
    KeyPrefix: account.keyPrefix,
    CreatedAt: new Date(account.createdAt).toISOString(),
    UpdatedAt: new Date(account.updatedAt).toISOString(),
  };
}
