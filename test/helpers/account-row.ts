import type { AccountRow } from "../../src/store/store.ts";

/**
 * An account row for unit tests of code that reads accounts (limits, the meter, grants):
 * account 7 under the owner 1, no limits, nothing allowed or refused, with `fields` over it.
 */
export function accountRow(fields: Partial<AccountRow> = {}): AccountRow {
  return {
    id: 7,
    parentId: 1,
    path: "/1/7/",
    rootId: 1,
    depth: 2,
    isOwner: false,
    email: "a@example.com",
    name: "acct",
    alias: null,
    billingEmail: null,
    rates: 1,
    rpm: null,
    rph: null,
    rpd: null,
    tpm: null,
    tph: null,
    tpd: null,
    dailyLimit: null,
    hardLimit: null,
    softLimit: null,
    modelLimits: null,
    allowIps: null,
    allowModels: null,
    resources: null,
    keyHash: "h",
    keyPrefix: "p",
    createdAt: 0,
    updatedAt: 0,
    deletedAt: null,
    ...fields,
  };
}
