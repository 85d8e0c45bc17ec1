import { describe, expect, test } from "bun:test";
import { HttpError } from "../../src/core/errors.ts";
import type { AccountInput } from "../../src/accounts/input.ts";
import { columnsForCreate, columnsForUpdate } from "../../src/accounts/grants.ts";
import type { AccountRow } from "../../src/store/store.ts";
import { accountRow } from "../helpers/account-row.ts";

const DEFAULT_RESOURCES = "/v1/*,/v1beta/*,/chat/completions,/responses,/embeddings,/models,/dashboard/*,/x-self,/x-pricing";

/** The caller of these tests: may manage accounts and grant DNA. */
const row = (overrides: Partial<AccountRow> = {}): AccountRow =>
  accountRow({ email: "caller@example.com", name: "caller", resources: `${DEFAULT_RESOURCES},/x-users*,/x-dna*`, keyPrefix: "sk-rt-xxxx", ...overrides });

const owner = row({ id: 1, parentId: null, path: "/1/", depth: 1, isOwner: true, resources: null });
const input = (fields: Partial<AccountInput> = {}): AccountInput => ({ limits: {}, ...fields });

const OWN_MODEL = { rpm: 10, tpm: 1000 };
const limited = row({
  rates: 1.5,
  rpm: 100,
  rph: 1000,
  rpd: 5000,
  tpm: 10_000,
  tph: 100_000,
  tpd: 1_000_000,
  dailyLimit: 10,
  hardLimit: 100,
  softLimit: 50,
  modelLimits: JSON.stringify({ "gpt-4o*": OWN_MODEL }),
  allowIps: "127.0.0.0/24,2001:db8::/32",
  allowModels: "gpt-*,claude-*",
});

/** The call must throw a 400 naming `param`. */
function refused(fn: () => unknown, param: string): void {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(HttpError);
    expect({ status: (error as HttpError).status, param: (error as HttpError).param }).toEqual({ status: 400, param });
    return;
  }
  throw new Error(`expected a 400 naming ${param}`);
}

const full = (overrides: Record<string, number> = {}) => ({ rpm: 10, rph: 1000, rpd: 5000, tpm: 1000, tph: 100_000, tpd: 1_000_000, ...overrides });

describe("columnsForCreate", () => {
  test("an owner's child: unlimited, Rates 1, default least-privilege Resources", () => {
    expect(columnsForCreate(owner, input())).toEqual({
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
      allowModels: null,
      allowIps: null,
      resources: DEFAULT_RESOURCES,
    });
  });

  test("owners may grant anything, including values a limited account could not", () => {
    const columns = columnsForCreate(owner, input({ rates: 2, limits: { RPM: 1e9, HardLimit: null }, resources: "*", allowIps: "0.0.0.0/0" }));
    expect(columns).toMatchObject({ rates: 2, rpm: 1e9, hardLimit: null, resources: "*", allowIps: "0.0.0.0/0" });
  });

  test("a limited caller's omitted fields are inherited", () => {
    expect(columnsForCreate(limited, input())).toEqual({
      rates: 1.5,
      rpm: 100,
      rph: 1000,
      rpd: 5000,
      tpm: 10_000,
      tph: 100_000,
      tpd: 1_000_000,
      dailyLimit: 10,
      hardLimit: 100,
      softLimit: 50,
      modelLimits: JSON.stringify({ "gpt-4o*": OWN_MODEL }),
      allowModels: "gpt-*,claude-*",
      allowIps: "127.0.0.0/24,2001:db8::/32",
      resources: DEFAULT_RESOURCES,
    });
  });

  test("each limit above the caller's, or null, is refused naming the field", () => {
    const fields = { RPM: 100, RPH: 1000, RPD: 5000, TPM: 10_000, TPH: 100_000, TPD: 1_000_000, DailyLimit: 10, HardLimit: 100, SoftLimit: 50 };
    for (const [field, cap] of Object.entries(fields)) {
      refused(() => columnsForCreate(limited, input({ limits: { [field]: cap + 0.5 } })), field);
      refused(() => columnsForCreate(limited, input({ limits: { [field]: null } })), field);
      expect(columnsForCreate(limited, input({ limits: { [field]: cap } }))).toBeDefined();
      expect(columnsForCreate(limited, input({ limits: { [field]: 0 } }))).toBeDefined();
    }
  });

  test("Rates below the caller's are refused", () => {
    refused(() => columnsForCreate(limited, input({ rates: 1.4 })), "Rates");
    expect(columnsForCreate(limited, input({ rates: 3 })).rates).toBe(3);
  });

  test("ModelLimits: bounded by the caller's entry and its account limits; its own entries must stay", () => {
    refused(() => columnsForCreate(limited, input({ modelLimits: { "gpt-4o*": full({ rpm: 11 }) } })), "ModelLimits");
    refused(() => columnsForCreate(limited, input({ modelLimits: { "gpt-4o*": full(), "gpt-4o-mini": full({ tpm: 1001 }) } })), "ModelLimits");
    refused(() => columnsForCreate(limited, input({ modelLimits: { "gpt-4o*": full(), "claude-*": full({ rph: 1001 }) } })), "ModelLimits");
    // A member the caller's entry limits must be set (unset, only the account limit would apply).
    refused(() => columnsForCreate(limited, input({ modelLimits: { "gpt-4o*": { rpm: 1 } } })), "ModelLimits");
    // Members the caller limits only at account level may stay unset: the child's account limit applies.
    expect(columnsForCreate(limited, input({ modelLimits: { "gpt-4o*": { rpm: 1, tpm: 1 }, "claude-*": { rpd: 7 } } })).modelLimits).toBe(
      JSON.stringify({ "gpt-4o*": { rpm: 1, tpm: 1 }, "claude-*": { rpd: 7 } }),
    );
    refused(() => columnsForCreate(limited, input({ modelLimits: { "gpt-4o*": { rpm: 1, tpm: 1, rph: 1001 } } })), "ModelLimits");
    // Dropping the caller's entry, or clearing all, would lift its model limit.
    refused(() => columnsForCreate(limited, input({ modelLimits: { "claude-*": full() } })), "ModelLimits");
    refused(() => columnsForCreate(limited, input({ modelLimits: null })), "ModelLimits");
    refused(() => columnsForCreate(limited, input({ modelLimits: {} })), "ModelLimits");
    const ok = columnsForCreate(limited, input({ modelLimits: { "gpt-4o*": full({ rpm: 3 }), "claude-*": full() } }));
    expect(JSON.parse(ok.modelLimits!)).toEqual({ "gpt-4o*": full({ rpm: 3 }), "claude-*": full() });
    // A caller with only account-level limits bounds every member through them.
    const accountOnly = row({ rpm: 50 });
    refused(() => columnsForCreate(accountOnly, input({ modelLimits: { "*": { rpm: 51 } } })), "ModelLimits");
    expect(columnsForCreate(accountOnly, input({ modelLimits: { "*": { rpm: 50, tpm: 9999 } } })).modelLimits).toBe(JSON.stringify({ "*": { rpm: 50, tpm: 9999 } }));
    expect(columnsForCreate(accountOnly, input({ modelLimits: { "*": { tpm: 1 } } })).modelLimits).toBe(JSON.stringify({ "*": { tpm: 1 } }));
    expect(columnsForCreate(accountOnly, input({ modelLimits: null })).modelLimits).toBeNull();
  });

  test("ModelLimits: a child pattern that would win over a caller's entry for models both cover is bounded by that entry", () => {
    const manager = row({ modelLimits: JSON.stringify({ "gpt-*": { rpm: 1 }, "*": { rpm: 100 }, "gpt-4o": { rpm: 5 } }) });
    const kept = { "gpt-*": { rpm: 1 }, "*": { rpm: 100 }, "gpt-4o": { rpm: 5 } };
    // "*pt-4o" is not a name "gpt-*" matches, but it is the more specific pattern for gpt-4o: it may not lift gpt-*'s 1.
    refused(() => columnsForCreate(manager, input({ modelLimits: { ...kept, "*pt-4o": { rpm: 1000 } } })), "ModelLimits");
    refused(() => columnsForCreate(manager, input({ modelLimits: { ...kept, "*pt-4o": {} } })), "ModelLimits");
    expect(columnsForCreate(manager, input({ modelLimits: { ...kept, "*pt-4o": { rpm: 1 } } })).modelLimits).toBeDefined();
    // An exact name wins over any pattern covering it: bounded by each.
    refused(() => columnsForCreate(manager, input({ modelLimits: { ...kept, "gpt-4o-mini": { rpm: 2 } } })), "ModelLimits");
    // The caller's own entries copied as they are, and a less specific pattern, stay allowed:
    // where the caller has a more specific entry, the child's copy of it wins.
    expect(columnsForCreate(manager, input({ modelLimits: kept })).modelLimits).toBe(JSON.stringify(kept));
    expect(columnsForCreate(manager, input({ modelLimits: { ...kept, "g*": { rpm: 100 } } })).modelLimits).toBeDefined();
    // Within models a more specific entry of the caller governs, that entry is the bound.
    const nested = row({ modelLimits: JSON.stringify({ "gpt-*": { rpm: 1 }, "gpt-4o*": { rpm: 5 } }) });
    const nestedKept = { "gpt-*": { rpm: 1 }, "gpt-4o*": { rpm: 5 } };
    expect(columnsForCreate(nested, input({ modelLimits: { ...nestedKept, "gpt-4o-mi*": { rpm: 5 } } })).modelLimits).toBeDefined();
    refused(() => columnsForCreate(nested, input({ modelLimits: { ...nestedKept, "gpt-4o-mi*": { rpm: 6 } } })), "ModelLimits");
    // Models no caller entry covers are bounded by the caller's "*" alone.
    expect(columnsForCreate(manager, input({ modelLimits: { ...kept, "claude-*": { rpm: 100 } } })).modelLimits).toBeDefined();
    refused(() => columnsForCreate(manager, input({ modelLimits: { ...kept, "claude-*": { rpm: 101 } } })), "ModelLimits");
  });

  test("AllowModels, AllowIPs and Resources stay within the caller's", () => {
    refused(() => columnsForCreate(limited, input({ allowModels: "gemini-*" })), "AllowModels");
    refused(() => columnsForCreate(limited, input({ allowModels: "*" })), "AllowModels");
    refused(() => columnsForCreate(limited, input({ allowModels: null })), "AllowModels");
    expect(columnsForCreate(limited, input({ allowModels: "gpt-4o,claude-3-*" })).allowModels).toBe("gpt-4o,claude-3-*");

    refused(() => columnsForCreate(limited, input({ allowIps: "127.0.0.0/23" })), "AllowIPs");
    refused(() => columnsForCreate(limited, input({ allowIps: "10.0.0.1" })), "AllowIPs");
    refused(() => columnsForCreate(limited, input({ allowIps: "" })), "AllowIPs");
    expect(columnsForCreate(limited, input({ allowIps: "127.0.0.16/28,2001:db8:1::/48" })).allowIps).toBe("127.0.0.16/28,2001:db8:1::/48");
    expect(columnsForCreate(limited, input({ allowIps: "::ffff:127.0.0.9" })).allowIps).toBe("::ffff:127.0.0.9");

    refused(() => columnsForCreate(limited, input({ resources: "/x-keys*" })), "Resources");
    refused(() => columnsForCreate(limited, input({ resources: "*" })), "Resources");
    expect(columnsForCreate(limited, input({ resources: "/v1/chat/completions,/x-users*" })).resources).toBe("/v1/chat/completions,/x-users*");
  });

  test("the default Resources are narrowed to what the caller itself may use", () => {
    const narrow = row({ resources: "/v1/*,/dashboard/*,/x-users*" });
    expect(columnsForCreate(narrow, input()).resources).toBe("/v1/*,/dashboard/*");
    // A caller without Resources of its own uses the default list.
    expect(columnsForCreate(row({ resources: null }), input()).resources).toBe(DEFAULT_RESOURCES);
  });
});

describe("columnsForUpdate", () => {
  test("only the fields present are written", () => {
    expect(columnsForUpdate(limited, input())).toEqual({});
    expect(columnsForUpdate(limited, input({ alias: "A", limits: { RPM: 5 } }))).toEqual({ alias: "A", rpm: 5 });
    expect(columnsForUpdate(owner, input({ limits: { RPM: null }, name: "new-name", email: "n@example.com", billingEmail: null }))).toEqual({
      rpm: null,
      name: "new-name",
      email: "n@example.com",
      billingEmail: null,
    });
  });

  test("the same scope rules as creation", () => {
    refused(() => columnsForUpdate(limited, input({ limits: { TPD: 1_000_001 } })), "TPD");
    refused(() => columnsForUpdate(limited, input({ limits: { SoftLimit: null } })), "SoftLimit");
    refused(() => columnsForUpdate(limited, input({ rates: 1 })), "Rates");
    refused(() => columnsForUpdate(limited, input({ modelLimits: null })), "ModelLimits");
    refused(() => columnsForUpdate(limited, input({ modelLimits: { "claude-*": full() } })), "ModelLimits");
    refused(() => columnsForUpdate(limited, input({ allowModels: "" })), "AllowModels");
    refused(() => columnsForUpdate(limited, input({ allowIps: null })), "AllowIPs");
    refused(() => columnsForUpdate(limited, input({ resources: "/x-config*" })), "Resources");
    expect(columnsForUpdate(limited, input({ modelLimits: { "gpt-4o*": full({ rpm: 1 }) } }))).toEqual({ modelLimits: JSON.stringify({ "gpt-4o*": full({ rpm: 1 }) }) });
  });

  test("clearing Resources restores the default; clearing lists is allowed for unrestricted callers", () => {
    expect(columnsForUpdate(limited, input({ resources: null })).resources).toBe(DEFAULT_RESOURCES);
    expect(columnsForUpdate(owner, input({ allowIps: null, allowModels: "", modelLimits: null }))).toEqual({ allowIps: null, allowModels: null, modelLimits: null });
  });
});
