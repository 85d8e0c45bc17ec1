import { describe, expect, test } from "bun:test";
import { Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { readAccountInput } from "../../src/accounts/input.ts";
import { accountRecord } from "../../src/accounts/records.ts";
import { badRequest, HttpError } from "../../src/core/errors.ts";
import { noticeRecord } from "../../src/admin/notices/routes.ts";
import { operationRecord } from "../../src/admin/oplog/routes.ts";
import { editRecord, fullRecord, summaryRecord } from "../../src/admin/provider-keys/records.ts";
import { keyHealthFigures } from "../../src/metering/key-health.ts";
import { nanosToCredits } from "../../src/accounts/records.ts";
import { buildBill } from "../../src/metering/reports/bill.ts";
import { rankUsers } from "../../src/metering/reports/ranking.ts";
import type { AccountRow, NoticeRow, OperationLogRow, ProviderKeyRow } from "../../src/store/store.ts";
import { AccountBody, AccountRecord, BatchCreditBody } from "../../src/wire/accounts.ts";
import { bodyCheck } from "../../src/wire/check.ts";
import { Notice, NoticeBody } from "../../src/wire/notices.ts";
import { LogRow } from "../../src/wire/oplog.ts";
import { ProviderKeyCreateBody, ProviderKeyEdit, ProviderKeyRecord, ProviderKeySummary } from "../../src/wire/provider-keys.ts";
import { BillInfo, UsageUser } from "../../src/wire/usage.ts";

/** The 400 a check throws: its param and message. */
function refusal(check: (body: never) => unknown, body: unknown): { param?: string; message: string } {
  try {
    check(body as never);
  } catch (error) {
    expect(error).toBeInstanceOf(HttpError);
    const e = error as HttpError;
    expect(e.status).toBe(400);
    return { param: e.param, message: e.message };
  }
  throw new Error(`accepted ${JSON.stringify(body)}`);
}

describe("bodyCheck", () => {
  const account = bodyCheck(AccountBody);

  test("a valid body passes and comes back as its typed value", () => {
    const body = { Email: "a@example.com", Name: "alice", RPM: 60, DailyLimit: 2.5, Alias: null, CreditGranted: -3, ModelLimits: { "gpt-*": { rpm: 1 } } };
    const typed = account(body);
    expect(typed).toBe(body);
    expect(typed.RPM).toBe(60);
  });

  test("null clears an optional field and is accepted where it always was", () => {
    expect(() => account({ Alias: null, RPM: null, DailyLimit: null, ModelLimits: null, AllowIPs: null, CreditGranted: null, Days: null })).not.toThrow();
  });

  test("a wrong type names the field and says the type", () => {
    expect(refusal(account, { Email: 5 })).toEqual({ param: "Email", message: "Email must be a string" });
    expect(refusal(account, { Alias: 5 })).toEqual({ param: "Alias", message: "Alias must be a string" });
    expect(refusal(account, { Rates: "2" })).toEqual({ param: "Rates", message: "Rates must be a finite number" });
  });

  test("too long names the field and the bound", () => {
    expect(refusal(account, { Name: "a".repeat(64) })).toEqual({ param: "Name", message: "Name must be at most 63 characters" });
  });

  test("an unknown field is refused by its own name, before the faults of known fields", () => {
    const { param, message } = refusal(account, { RPM: "x", Colour: "red" });
    expect(param).toBe("Colour");
    expect(message).toStartWith("Unknown field Colour; accepted fields: Email, Name");
  });

  test("negative and non-integer counts are refused", () => {
    expect(refusal(account, { RPM: -1 })).toEqual({ param: "RPM", message: "RPM must not be negative" });
    expect(refusal(account, { RPM: 1.5 })).toEqual({ param: "RPM", message: "RPM must be an integer" });
    expect(refusal(account, { Days: 0 }).param).toBe("Days");
  });

  test("a fault inside a nested value names the top-level field and the path in the message", () => {
    expect(refusal(account, { ModelLimits: { "gpt-4o*": { rpm: 1.5 } } })).toEqual({ param: "ModelLimits", message: 'ModelLimits["gpt-4o*"].rpm must be an integer' });
    const unknown = refusal(account, { ModelLimits: { "*": { RPM: 2 } } });
    expect(unknown.param).toBe("ModelLimits");
    expect(unknown.message).toContain("RPM");
  });

  test("faults are reported in the order the model declares its fields", () => {
    expect(refusal(account, { Days: -1, Email: 5 }).param).toBe("Email");
  });

  test("a missing required field is reported where the model says it is checked", () => {
    const batch = bodyCheck(BatchCreditBody);
    expect(refusal(batch, { CreditGranted: 1 })).toEqual({ param: "IDs", message: "IDs is required" });
    expect(refusal(batch, { IDs: [1, 1.5], CreditGranted: 1 })).toEqual({ param: "IDs", message: "IDs[1] must be an account ID" });
    // Unknown first by default; a provider key's creation has always named the missing field first.
    expect(refusal(batch, { Colour: 1 }).param).toBe("Colour");
    expect(refusal(bodyCheck(ProviderKeyCreateBody, { requiredFirst: true }), { Colour: 1 }).param).toBe("Provider");
  });

  test("an `expected` option words every fault of its field", () => {
    const notice = bodyCheck(NoticeBody);
    expect(refusal(notice, { title: "t", content: "c", target: true })).toEqual({ param: "target", message: "target must be an account ID, name or email" });
    expect(refusal(notice, { title: "t", content: "c", days: 366 })).toEqual({ param: "days", message: "days must be an integer from 1 to 365" });
  });

  test("field rules run in field order, interleaved with the structural checks", () => {
    const seen: string[] = [];
    const check = bodyCheck(Type.Object({ a: Type.String(), b: Type.Integer(), c: Type.String() }), {
      rules: {
        c: (c) => void seen.push(`c:${c}`),
        a: (a) => {
          seen.push(`a:${a}`);
          if (a === "bad") throw badRequest("a is bad", "a");
        },
      },
    });
    expect(check({ a: "x", b: 1, c: "y" })).toEqual({ a: "x", b: 1, c: "y" });
    expect(seen).toEqual(["a:x", "c:y"]);
    // A rule of an earlier field beats a structural fault of a later one, and the reverse.
    expect(refusal(check, { a: "bad", b: "1", c: "y" })).toEqual({ param: "a", message: "a is bad" });
    seen.length = 0;
    expect(refusal(check, { a: "x", b: "1", c: "y" }).param).toBe("b");
    expect(seen).toEqual(["a:x"]);
    // The account body: an invalid address (a rule) is reported before a negative RPM (the model).
    expect(refusal(readAccountInput, { RPM: -1, Email: "not-an-address" }).param).toBe("Email");
    expect(refusal(readAccountInput, { Email: "a@example.com", RPM: -1, AllowIPs: "10.0.0.0/33" }).param).toBe("RPM");
  });

  test("bounds carry their unit; integers past 2^53 are refused as such", () => {
    expect(refusal(account, { DailyLimit: 1e300 })).toEqual({ param: "DailyLimit", message: "DailyLimit must be at most 1000000 credits" });
    expect(refusal(account, { RPM: 2 ** 53 }).message).toBe("RPM must be an integer of at most 2^53 - 1");
  });

  test("a schema compiled once serves many bodies", () => {
    const check = bodyCheck(Type.Object({ n: Type.Integer() }, { additionalProperties: false }));
    for (let n = 0; n < 100; n++) expect(check({ n }).n).toBe(n);
  });
});

describe("the server's record builders produce their wire models", () => {
  const account: AccountRow = {
    id: 7,
    parentId: 1,
    path: "/1/7/",
    rootId: 1,
    depth: 2,
    isOwner: false,
    email: "caller@example.com",
    name: "caller",
    alias: "C",
    billingEmail: null,
    rates: 1.5,
    rpm: 60,
    rph: null,
    rpd: null,
    tpm: 1000,
    tph: null,
    tpd: null,
    dailyLimit: 2.5,
    hardLimit: null,
    softLimit: null,
    modelLimits: JSON.stringify({ "gpt-4o*": { rpm: 10 } }),
    allowIps: "127.0.0.0/24",
    allowModels: null,
    resources: "/v1/*,/x-users*",
    keyHash: "h",
    keyPrefix: "sk-rt-xxxx",
    createdAt: 1_700_000_000_000,
    updatedAt: 1_700_000_100_000,
    deletedAt: null,
  };

  test("accountRecord", () => {
    const record = accountRecord(account);
    expect([...Value.Errors(AccountRecord, record)]).toEqual([]);
    // A record read back is a valid update body once the read-only fields are dropped
    // (the identity in the spec's spelling, id, name, email, alias and level, among them).
    const { ID: _id, ParentID: _p, Level: _l, IsOwner: _o, KeyPrefix: _k, CreatedAt: _c, UpdatedAt: _u, id: _i, name: _n, email: _e, alias: _a, level: _v, ...body } = record;
    expect(Value.Check(AccountBody, body)).toBe(true);
  });

  test("provider key summary, full and edit records", () => {
    const row: ProviderKeyRow = {
      id: 3,
      tenantId: 0,
      name: "main",
      level: 1,
      provider: "https://api.example.com/v1",
      secretSealed: "sealed",
      partialKey: "…abcdefghijklmnopqrst",
      noSleep: false,
      status: true,
      sleeping: true,
      sleepReason: "errors",
      sleepUntil: 1_700_000_200_000,
      sleepCount: 2,
      config: JSON.stringify({ provider_type: "azure", deployments: { "gpt-4o": "prod" } }),
      createdAt: 1_700_000_000_000,
      updatedAt: 1_700_000_100_000,
    };
    const partial = "…abcdefghijklmnopqrst";
    expect(Value.Check(ProviderKeySummary, summaryRecord(row, partial))).toBe(true);
    const quiet = keyHealthFigures(undefined, "2026-03-10", nanosToCredits);
    expect([...Value.Errors(ProviderKeyRecord, fullRecord(row, partial, "sk-" + "x".repeat(30), quiet))]).toEqual([]);
    // The edit form is the full record less the secret, and its model refuses one.
    const edit = editRecord(row, partial, quiet);
    expect([...Value.Errors(ProviderKeyEdit, edit)]).toEqual([]);
    expect(edit).toEqual(Object.fromEntries(Object.entries(fullRecord(row, partial, "sk-" + "x".repeat(30), quiet)).filter(([field]) => field !== "SecretKey")) as typeof edit);
    expect(Object.keys(ProviderKeyEdit.properties)).not.toContain("SecretKey");
    const busy = keyHealthFigures(
      { keyId: 3, tenantId: 0, day: "2026-03-10", requests: 4, errors: 1, latencyMs: 1000, spendNanos: 1_500_000, lastErrorAt: 1_700_000_000_000, lastErrorStatus: null, lastErrorMessage: "timeout", lastSuccessAt: 1_700_000_100_000 },
      "2026-03-10",
      nanosToCredits,
    );
    expect(busy.Today).toEqual({ Requests: 4, Errors: 1, Spend: nanosToCredits(1_500_000), AvgLatencyMs: 250 });
    expect([...Value.Errors(ProviderKeyRecord, fullRecord(row, partial, "sk-" + "x".repeat(30), busy))]).toEqual([]);
  });

  test("notice and operation-log row", () => {
    const notice: NoticeRow = { id: 1, tenantId: 0, title: "Hello", content: "World", authorId: 1, targetId: null, createdAt: 1_700_000_000_000, expiresAt: 1_700_086_400_000 };
    expect(Value.Check(Notice, noticeRecord(notice))).toBe(true);
    const log: OperationLogRow = { id: 9, tenantId: 0, at: 1_700_000_000_000, actorId: 1, action: "account.create", targetId: 7, details: '{"email":"a@example.com"}', ip: "127.0.0.1" };
    expect(Value.Check(LogRow, operationRecord(log))).toBe(true);
  });

  test("bill and ranking", () => {
    const sums = { requests: 2, prompt: 100, completion: 50, reasoning: 0, cacheRead: 10, cacheWrite: 0, costNanos: 1_500_000_000 };
    const bill = buildBill([{ ...sums, day: "2025-03-01", model: "gpt-4o" }], { start: "2025-03-01", end: "2025-03-02" });
    expect([...Value.Errors(BillInfo, bill)]).toEqual([]);
    const ranking = rankUsers([{ ...sums, accountId: 7, model: "gpt-4o" }], (id) => ({ id, name: "caller", alias: null, email: "caller@example.com" }));
    expect(ranking).toHaveLength(1);
    expect(Value.Check(UsageUser, ranking[0])).toBe(true);
  });
});
