import { describe, expect, test } from "bun:test";
import { readInvalidation } from "../../src/core/invalidation.ts";

/** What an instance makes of a bus event from another instance, perhaps of another version (review-rolling). */
describe("readInvalidation", () => {
  test("every kind this version publishes is read as it was sent", () => {
    for (const event of [
      { kind: "account", accountId: 7 },
      { kind: "credit", accountId: 0 },
      { kind: "keys", tenantId: 3 },
      { kind: "config", tenantId: 0 },
      { kind: "routing", tenantId: 12 },
      { kind: "object", objectId: "file-abc" },
      { kind: "everything" },
    ]) {
      expect(readInvalidation(event)).toEqual(event as never);
    }
  });

  test("fields a newer version adds to a known kind are left out; what this version reads stays", () => {
    expect(readInvalidation({ kind: "account", accountId: 7, subtree: true })).toEqual({ kind: "account", accountId: 7 });
  });

  test("anything it cannot read whole is everything: unknown kinds, ids of another type, missing fields, non-objects", () => {
    for (const event of [
      { kind: "accounts", accountIds: [7] },
      { kind: "account", accountId: "7" },
      { kind: "account", accountId: 7.5 },
      { kind: "keys" },
      { kind: "config", tenantId: null },
      { kind: "object", objectId: 5 },
      { kind: 1 },
      {},
      null,
      "account",
      [{ kind: "account", accountId: 7 }],
      undefined,
    ]) {
      expect(readInvalidation(event)).toEqual({ kind: "everything" });
    }
  });
});
