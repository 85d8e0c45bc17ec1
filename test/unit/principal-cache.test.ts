import { describe, expect, test } from "bun:test";
import { createPrincipalCache, PRINCIPAL_RETRY_MS, PRINCIPAL_TTL_MS } from "../../src/accounts/principal.ts";
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

  test("while other processes' invalidations cannot arrive, each use loads again; a failed load serves the cached entry", async () => {
    let alive = true;
    let storeAway = false;
    let listening = true;
    let loads = 0;
    const cache = createPrincipalCache(
      async () => {
        loads++;
        if (storeAway) throw new Error("database away");
        return alive ? row(8, null) : undefined;
      },
      Date.now,
      undefined,
      () => listening,
    );
    expect(await cache.get("h8")).toBeDefined();
    expect(await cache.get("h8")).toBeDefined();
    expect(loads).toBe(1);
    // The bus lost Redis: a key rotated elsewhere now is refused at its next use.
    listening = false;
    expect(await cache.get("h8")).toBeDefined();
    expect(loads).toBe(2);
    alive = false;
    expect(await cache.get("h8")).toBeUndefined();
    // The store away too: what was cached is served on, without a load at every use.
    alive = true;
    expect(await cache.get("h8")).toBeDefined();
    storeAway = true;
    expect(await cache.get("h8")).toBeDefined();
    const before = loads;
    expect(await cache.get("h8")).toBeDefined();
    expect(loads).toBe(before);
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

describe("the principal cache while the store cannot be read", () => {
  const failing = () => {
    let now = 0;
    let down = false;
    let loads = 0;
    let stored = row(8, "gpt-4o");
    const served: unknown[] = [];
    const cache = createPrincipalCache(
      async () => {
        loads++;
        if (down) throw new Error("connection refused");
        return stored;
      },
      () => now,
      (error) => served.push(error),
    );
    return {
      cache,
      served,
      loads: () => loads,
      advance: (ms: number) => (now += ms),
      setDown: (value: boolean) => (down = value),
      store: (value: AccountRow) => (stored = value),
    };
  };

  test("an expired principal is served on, and the store tried again every few seconds, until it answers", async () => {
    const t = failing();
    expect(await t.cache.get("h8")).toBeDefined();
    t.setDown(true);
    t.advance(PRINCIPAL_TTL_MS);
    expect((await t.cache.get("h8"))!.account.allowModels).toBe("gpt-4o");
    expect(t.served).toHaveLength(1);
    expect(t.loads()).toBe(2);
    // No second read until the retry is due.
    t.advance(PRINCIPAL_RETRY_MS - 1);
    expect(await t.cache.get("h8")).toBeDefined();
    expect(t.loads()).toBe(2);
    t.advance(1);
    expect(await t.cache.get("h8")).toBeDefined();
    expect(t.loads()).toBe(3);
    // The store is back, with a change made meanwhile.
    t.setDown(false);
    t.store(row(8, "claude-*"));
    t.advance(PRINCIPAL_RETRY_MS);
    expect((await t.cache.get("h8"))!.account.allowModels).toBe("claude-*");
  });

  test("an account changed is never served from before its change, whether the store answers or not", async () => {
    const t = failing();
    expect(await t.cache.get("h8")).toBeDefined();
    t.cache.invalidateAccount(8);
    t.setDown(true);
    await expect(t.cache.get("h8")).rejects.toThrow("connection refused");
    expect(t.served).toHaveLength(0);
  });

  test("after everything is dropped (messages missed), each key is read again, and served from before only while the store is away", async () => {
    const t = failing();
    expect(await t.cache.get("h8")).toBeDefined();
    t.cache.clear();
    t.store(row(8, "o*"));
    expect((await t.cache.get("h8"))!.account.allowModels).toBe("o*");
    expect(t.loads()).toBe(2);
    t.cache.clear();
    t.setDown(true);
    expect((await t.cache.get("h8"))!.account.allowModels).toBe("o*");
    expect(t.served).toHaveLength(1);
    // A key never read before cannot be served at all.
    await expect(t.cache.get("h9")).rejects.toThrow("connection refused");
  });

  test("a change to another account while a key loads does not stop it being kept", async () => {
    let loads = 0;
    let finish!: () => void;
    const cache = createPrincipalCache(async () => {
      loads++;
      if (loads === 1) await new Promise<void>((resolve) => (finish = resolve));
      return row(10, null);
    });
    const pending = cache.get("h10");
    cache.invalidateAccount(11);
    finish();
    await pending;
    await cache.get("h10");
    expect(loads).toBe(1);
  });
});
