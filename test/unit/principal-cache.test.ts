import { describe, expect, test } from "bun:test";
import { createPrincipalCache, PRINCIPAL_TTL_MS } from "../../src/accounts/principal.ts";
import type { AccountRow } from "../../src/store/store.ts";

const row = (id: number, allowModels: string | null): AccountRow =>
  ({ id, allowModels, allowIps: null, resources: null, isOwner: false, path: `/1/${id}/`, keyHash: `h${id}` }) as AccountRow;

describe("the principal cache", () => {
  test("a hit costs no load; an invalidation or the TTL backstop loads again", async () => {
    let now = 1_000_000;
    let stored = row(5, "gpt-4o");
    let loads = 0;
    const cache = createPrincipalCache(async () => {
      loads++;
      return stored;
    }, () => now);
    expect((await cache.get("h5"))!.account.allowModels).toBe("gpt-4o");
    expect(await cache.get("h5")).toBeDefined();
    expect(loads).toBe(1);

    // A change whose invalidation was missed is seen once the entry expires.
    stored = row(5, "claude-*");
    now += PRINCIPAL_TTL_MS - 1;
    expect((await cache.get("h5"))!.account.allowModels).toBe("gpt-4o");
    now += 1;
    expect((await cache.get("h5"))!.account.allowModels).toBe("claude-*");
    expect(loads).toBe(2);

    stored = row(5, "o*");
    cache.invalidateAccount(5);
    expect((await cache.get("h5"))!.account.allowModels).toBe("o*");
    expect(loads).toBe(3);
  });

  test("a key that no longer loads (rotated elsewhere) is gone at the backstop", async () => {
    let now = 0;
    let alive = true;
    const cache = createPrincipalCache(async () => (alive ? row(6, null) : undefined), () => now);
    expect(await cache.get("h6")).toBeDefined();
    alive = false;
    now += PRINCIPAL_TTL_MS;
    expect(await cache.get("h6")).toBeUndefined();
  });

  test("a load overtaken by an invalidation answers its request but is not kept", async () => {
    let stored = row(7, "gpt-4o");
    let finish!: () => void;
    let slow = true;
    const cache = createPrincipalCache(async () => {
      const seen = stored;
      if (slow) await new Promise<void>((resolve) => (finish = resolve));
      return seen;
    });
    const pending = cache.get("h7");
    // The account changes while its old row is on its way back.
    stored = row(7, "claude-*");
    cache.invalidateAccount(7);
    finish();
    expect((await pending)!.account.allowModels).toBe("gpt-4o");
    slow = false;
    expect((await cache.get("h7"))!.account.allowModels).toBe("claude-*");
  });
});
