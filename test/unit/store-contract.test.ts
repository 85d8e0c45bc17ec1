import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrateDatabase, openPostgresStore } from "../../src/store/postgres/index.ts";
import { openSqliteStore } from "../../src/store/sqlite/store.ts";
import { usageRowIdentity, type NewAccountRow, type NewKeyHealthRow, type NewRequestLogRow, type RequestLogFilter, type Store } from "../../src/store/store.ts";
import { skipServices, startPostgres, type PostgresServer } from "../helpers/postgres-server.ts";
import { createClock } from "../../src/core/clock.ts";
import { createLogger } from "../../src/core/log.ts";
import { createUsageRecorder, type UsageEvent } from "../../src/metering/usage-recorder.ts";

/**
 * The contract every store keeps (issue 14, item 4), run against each implementation:
 * the embedded SQLite one and PostgreSQL (issue 15). What is stored comes back as it
 * went in, filters and orders mean the same everywhere, and a transaction's writes
 * commit together or not at all.
 */
interface Opened {
  store: Store;
  /** Another store on the same database, as a second instance would open it (PostgreSQL only). */
  second?: () => Promise<Store>;
  dispose(): Promise<void>;
}

interface Implementation {
  /** Whether `Opened.second` exists: a second store on the same database, usable at once from this process. */
  instances: boolean;
  setUp(): Promise<void>;
  open(): Promise<Opened>;
  tearDown(): Promise<void>;
}

// Two SQLite connections in one process cannot take turns: a second writer waits in
// SQLite's busy handler, which blocks the thread the first one needs to finish.
const sqlite: Implementation = {
  instances: false,
  setUp: async () => {},
  async open() {
    const dir = mkdtempSync(join(tmpdir(), "store-contract-"));
    const store = openSqliteStore(join(dir, "router.db"));
    return {
      store,
      async dispose() {
        store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
  tearDown: async () => {},
};

/** One throwaway cluster for the file; each test gets a fresh database copied from a migrated template. */
function postgres(): Implementation {
  let server: PostgresServer | undefined;
  let template: string | undefined;
  return {
    instances: true,
    async setUp() {
      server = await startPostgres();
      template = await server.createDatabase();
      await migrateDatabase(server.url(template));
    },
    async open() {
      if (!server || !template) throw new Error("the PostgreSQL cluster did not start (see the first failure)");
      const cluster = server;
      const name = await cluster.createDatabase(template);
      const store = await openPostgresStore(cluster.url(name), { migrate: false });
      const others: Store[] = [];
      return {
        store,
        async second() {
          const other = await openPostgresStore(cluster.url(name), { migrate: false });
          others.push(other);
          return other;
        },
        async dispose() {
          for (const s of [store, ...others]) s.close();
          await cluster.dropDatabase(name);
        },
      };
    },
    async tearDown() {
      await server?.stop();
    },
  };
}

const implementations: Array<[string, Implementation]> = [["sqlite", sqlite]];
if (!skipServices) implementations.push(["postgres", postgres()]);

const T0 = Date.UTC(2026, 2, 10, 12);
const DAY = 86_400_000;

describe.each(implementations)("store: %s", (name, implementation) => {
  let current: Opened | undefined;
  const fresh = async () => (current = await implementation.open()).store;
  beforeAll(() => implementation.setUp(), 60_000);
  afterAll(() => implementation.tearDown(), 30_000);
  afterEach(async () => {
    await current?.dispose();
    current = undefined;
  });

  let sequence = 0;
  const account = (fields: Partial<Omit<NewAccountRow, "path" | "rootId">> = {}): Omit<NewAccountRow, "path" | "rootId"> => {
    const n = ++sequence;
    return { depth: 1, isOwner: false, email: `a${n}@example.com`, name: `account-${n}`, keyHash: `hash-${n}`, keyPrefix: `sk-${n}`, createdAt: T0 + n, updatedAt: T0 + n, ...fields };
  };

  describe("accounts", () => {
    test("an inserted account gets its materialised path and root under its parent's and is found in its tree by id, email, name and key", async () => {
      const store = await fresh();
      const owner = await store.accounts.insert(account({ isOwner: true }), "");
      expect([owner.path, owner.rootId]).toEqual([`/${owner.id}/`, owner.id]);
      const child = await store.accounts.insert(account({ parentId: owner.id, depth: 2 }), owner.path);
      expect([child.path, child.rootId]).toEqual([`/${owner.id}/${child.id}/`, owner.id]);
      const grandchild = await store.accounts.insert(account({ parentId: child.id, depth: 3 }), child.path);
      expect(grandchild.rootId).toBe(owner.id);
      expect((await store.accounts.find(owner.id, { id: child.id }))?.id).toBe(child.id);
      expect((await store.accounts.find(owner.id, { email: child.email }))?.id).toBe(child.id);
      expect((await store.accounts.find(owner.id, { name: child.name }))?.id).toBe(child.id);
      expect((await store.accounts.byKeyHash(child.keyHash))?.id).toBe(child.id);
      expect(await store.accounts.liveIdWith(owner.id, "email", child.email)).toBe(child.id);
      expect(await store.accounts.liveIdWith(owner.id, "name", "nobody")).toBeUndefined();
      expect(await store.accounts.liveOwnerIdWith(owner.email)).toBe(owner.id);
      expect(await store.accounts.liveOwnerIdWith(child.email)).toBeUndefined();
      expect(await store.accounts.countLive()).toBe(3);
      expect(await store.accounts.hasLiveChild(owner.id)).toBe(true);
    });

    test("a deleted account keeps its row but is no longer live, and frees its email and key", async () => {
      const store = await fresh();
      const owner = await store.accounts.insert(account({ isOwner: true }), "");
      const child = await store.accounts.insert(account({ parentId: owner.id }), owner.path);
      await store.accounts.markDeleted(child.id, T0 + DAY, "deleted:x");
      expect(await store.accounts.byId(child.id)).toBeUndefined();
      expect(await store.accounts.byKeyHash(child.keyHash)).toBeUndefined();
      expect(await store.accounts.liveIdWith(owner.id, "email", child.email)).toBeUndefined();
      expect((await store.accounts.anyById(child.id))?.deletedAt).toBe(T0 + DAY);
      expect(await store.accounts.hasLiveChild(owner.id)).toBe(false);
      expect((await store.accounts.identities([child.id])).get(child.id)?.email).toBe(child.email);
      // The email is free again.
      const again = await store.accounts.insert(account({ email: child.email, parentId: owner.id }), owner.path);
      expect(again.id).not.toBe(child.id);
    });

    test("emails and names are unique within a tree, not across trees; the database itself refuses a second one in a tree", async () => {
      const store = await fresh();
      const ownerA = await store.accounts.insert(account({ isOwner: true }), "");
      const ownerB = await store.accounts.insert(account({ isOwner: true }), "");
      const shared = { email: "shared@example.com", name: "shared-name" };
      const inA = await store.accounts.insert(account({ ...shared, parentId: ownerA.id, depth: 2 }), ownerA.path);
      const inB = await store.accounts.insert(account({ ...shared, parentId: ownerB.id, depth: 2 }), ownerB.path);
      for (const [root, expected] of [[ownerA.id, inA.id], [ownerB.id, inB.id]] as const) {
        expect((await store.accounts.find(root, { email: shared.email }))?.id).toBe(expected);
        expect((await store.accounts.find(root, { name: shared.name }))?.id).toBe(expected);
        expect(await store.accounts.liveIdWith(root, "email", shared.email)).toBe(expected);
      }
      // Another tree's account is not found by its id either.
      expect(await store.accounts.find(ownerB.id, { id: inA.id })).toBeUndefined();
      // Deeper in tree A, and against the owner (part of its own tree), the indexes refuse.
      const under = (fields: { email?: string; name?: string }) => store.accounts.insert(account({ parentId: inA.id, depth: 3, ...fields }), inA.path);
      await expect(under({ email: shared.email })).rejects.toThrow();
      await expect(under({ name: shared.name })).rejects.toThrow();
      await expect(under({ email: ownerA.email })).rejects.toThrow();
      await expect(under({ name: ownerA.name })).rejects.toThrow();
      expect(await store.accounts.countLive()).toBe(4);
      expect(await store.accounts.hasLiveChild(inA.id)).toBe(false);
    });

    test("an owner's email is unique among owners only; owners may share names, and other trees' accounts may use an owner's email", async () => {
      const store = await fresh();
      const first = await store.accounts.insert(account({ isOwner: true, email: "boss@example.com", name: "same-owner-name" }), "");
      await expect(store.accounts.insert(account({ isOwner: true, email: "boss@example.com" }), "")).rejects.toThrow();
      const second = await store.accounts.insert(account({ isOwner: true, name: "same-owner-name" }), "");
      const child = await store.accounts.insert(account({ parentId: second.id, depth: 2, email: "boss@example.com" }), second.path);
      // An address one tree's account uses can still start a tree of its own.
      const third = await store.accounts.insert(account({ isOwner: true, email: "kid@example.com" }), "");
      await store.accounts.insert(account({ parentId: second.id, depth: 2, email: "kid@example.com" }), second.path);
      expect(await store.accounts.liveOwnerIdWith("boss@example.com")).toBe(first.id);
      expect(await store.accounts.liveOwnerIdWith("kid@example.com")).toBe(third.id);
      expect((await store.accounts.find(second.id, { email: "boss@example.com" }))?.id).toBe(child.id);
      expect([second.rootId, third.rootId]).toEqual([second.id, third.id]);
    });

    test("a deleted account frees its email and name within its tree, and a deleted owner its address among owners", async () => {
      const store = await fresh();
      const owner = await store.accounts.insert(account({ isOwner: true }), "");
      const child = await store.accounts.insert(account({ parentId: owner.id, depth: 2 }), owner.path);
      await store.accounts.markDeleted(child.id, T0 + DAY, "deleted:child");
      const again = await store.accounts.insert(account({ parentId: owner.id, depth: 2, email: child.email, name: child.name }), owner.path);
      expect((await store.accounts.find(owner.id, { name: child.name }))?.id).toBe(again.id);
      await store.accounts.markDeleted(owner.id, T0 + DAY, "deleted:owner");
      expect(await store.accounts.liveOwnerIdWith(owner.email)).toBeUndefined();
      const successor = await store.accounts.insert(account({ isOwner: true, email: owner.email }), "");
      expect(await store.accounts.liveOwnerIdWith(owner.email)).toBe(successor.id);
    });

    test("a key is replaced only while it is still the expected one", async () => {
      const store = await fresh();
      const owner = await store.accounts.insert(account({ isOwner: true }), "");
      expect(await store.accounts.replaceKey(owner.id, owner.keyHash, "new-hash", "sk-new", T0)).toBe(true);
      expect(await store.accounts.replaceKey(owner.id, owner.keyHash, "other", "sk-other", T0)).toBe(false);
      expect((await store.accounts.byId(owner.id))?.keyHash).toBe("new-hash");
    });

    test("lists: direct children or the whole subtree, filtered, ordered and paged, with the total", async () => {
      const store = await fresh();
      const root = await store.accounts.insert(account({ isOwner: true }), "");
      const a = await store.accounts.insert(account({ parentId: root.id, depth: 2, name: "Zeta-one", email: "zeta@example.com" }), root.path);
      const b = await store.accounts.insert(account({ parentId: root.id, depth: 2, name: "alpha-two" }), root.path);
      const c = await store.accounts.insert(account({ parentId: a.id, depth: 3, name: "zeta-three" }), a.path);
      const direct = await store.accounts.list({ within: { parentId: root.id } }, "id", 1, 10);
      expect(direct.rows.map((r) => r.id)).toEqual([a.id, b.id]);
      const subtree = await store.accounts.list({ within: { path: root.path, exceptId: root.id } }, "-id", 1, 10);
      expect(subtree.rows.map((r) => r.id)).toEqual([c.id, b.id, a.id]);
      expect((await store.accounts.list({ within: { path: root.path, exceptId: root.id } }, "name", 1, 10)).rows.map((r) => r.name)).toEqual(["Zeta-one", "alpha-two", "zeta-three"]);
      expect((await store.accounts.list({ within: { path: root.path, exceptId: root.id } }, "-level", 1, 10)).rows[0]!.id).toBe(c.id);
      // Name filters ignore case; email filters match the stored (lower-case) email.
      const zetas = await store.accounts.list({ within: { path: root.path, exceptId: root.id }, nameContains: "ZETA" }, "id", 1, 10);
      expect(zetas.rows.map((r) => r.id)).toEqual([a.id, c.id]);
      expect((await store.accounts.list({ within: { path: root.path, exceptId: root.id }, emailContains: "ZETA@" }, "id", 1, 10)).rows.map((r) => r.id)).toEqual([a.id]);
      expect((await store.accounts.list({ within: { path: root.path, exceptId: root.id }, level: 3 }, "id", 1, 10)).rows.map((r) => r.id)).toEqual([c.id]);
      const page = await store.accounts.list({ within: { path: root.path, exceptId: root.id } }, "id", 2, 2);
      expect(page).toMatchObject({ total: 3 });
      expect(page.rows.map((r) => r.id)).toEqual([c.id]);
    });
  });

  describe("credit", () => {
    test("grants are drawn earliest expiry first; consumption beyond them becomes debt; balance counts unexpired credit", async () => {
      const store = await fresh();
      await store.credit.give(1, [{ amount: 100, expiresAt: null }, { amount: 50, expiresAt: T0 + DAY }, { amount: 30, expiresAt: T0 + 2 * DAY }], null, T0);
      expect(await store.credit.balance(1, T0)).toBe(180);
      expect((await store.credit.ledgerBalance(1, T0)).expiring[0]?.at).toBe(T0 + DAY);
      expect(await store.credit.take(1, 60, T0)).toEqual([
        { amount: 50, expiresAt: T0 + DAY },
        { amount: 10, expiresAt: T0 + 2 * DAY },
      ]);
      expect((await store.credit.ledgerBalance(1, T0)).expiring[0]?.at).toBe(T0 + 2 * DAY);
      // After its expiry a grant no longer counts.
      expect(await store.credit.balance(1, T0 + 3 * DAY)).toBe(100);
      await store.credit.consume(1, 150, T0);
      expect(await store.credit.balance(1, T0)).toBe(-30);
      expect((await store.credit.grants(1, T0)).map((g) => g.remaining)).toEqual([-30]);
      await store.credit.clearDebt(1);
      expect(await store.credit.balance(1, T0)).toBe(0);
    });

    test("credit given to an account that owes settles the debt first, from the pieces that expire first", async () => {
      const store = await fresh();
      await store.credit.consume(1, 30, T0);
      expect(await store.credit.balance(1, T0)).toBe(-30);
      await store.credit.give(1, [{ amount: 100, expiresAt: null }, { amount: 20, expiresAt: T0 + DAY }], null, T0);
      expect(await store.credit.balance(1, T0)).toBe(90);
      // The expiring piece paid the debt first (the rest from the next piece): once it
      // expires, nothing of the debt is back.
      expect(await store.credit.balance(1, T0 + 2 * DAY)).toBe(90);
      expect((await store.credit.grants(1, T0)).map((g) => g.remaining)).toEqual([90]);
      await store.credit.give(1, [{ amount: 5, expiresAt: null }], null, T0);
      expect((await store.credit.grants(1, T0)).map((g) => g.remaining).sort((a, b) => a - b)).toEqual([5, 90]);
    });

    test("taking everything takes what is there, never debt; accounts do not share grants", async () => {
      const store = await fresh();
      await store.credit.give(1, [{ amount: 40, expiresAt: null }], 2, T0);
      await store.credit.give(2, [{ amount: 5, expiresAt: null }], null, T0);
      expect(await store.credit.take(1, Infinity, T0)).toEqual([{ amount: 40, expiresAt: null }]);
      expect(await store.credit.balance(1, T0)).toBe(0);
      expect(await store.credit.balance(2, T0)).toBe(5);
      expect(await store.credit.take(1, Infinity, T0)).toEqual([]);
    });
  });

  describe("transactions", () => {
    test("writes commit together; a body that throws leaves nothing behind", async () => {
      const store = await fresh();
      await store.transaction(async (tx) => {
        await tx.credit.give(1, [{ amount: 10, expiresAt: null }], null, T0);
        await tx.credit.give(2, [{ amount: 20, expiresAt: null }], null, T0);
      });
      await expect(
        store.transaction(async (tx) => {
          await tx.credit.give(1, [{ amount: 1000, expiresAt: null }], null, T0);
          throw new Error("refused halfway");
        }),
      ).rejects.toThrow("refused halfway");
      expect(await store.credit.balance(1, T0)).toBe(10);
      expect(await store.credit.balance(2, T0)).toBe(20);
    });

    test("others never see a transaction's writes before it commits, and their writes never land inside it", async () => {
      const store = await fresh();
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const running = store.transaction(async (tx) => {
        await tx.credit.give(1, [{ amount: 10, expiresAt: null }], null, T0);
        await gate;
        throw new Error("rolled back");
      });
      const seen = store.credit.balance(1, T0);
      const written = store.credit.give(2, [{ amount: 7, expiresAt: null }], null, T0);
      release();
      await expect(running).rejects.toThrow("rolled back");
      expect(await seen).toBe(0);
      await written;
      expect(await store.credit.balance(2, T0)).toBe(7);
      expect(await store.credit.balance(1, T0)).toBe(0);
    });

    test("concurrent read-modify-write transactions do not lose an update", async () => {
      const store = await fresh();
      await store.settings.put(0, [["COUNTER", "0"]], T0);
      const bump = () =>
        store.transaction(async (tx) => {
          const value = Number((await tx.settings.all(0)).find((row) => row.key === "COUNTER")!.value);
          await Bun.sleep(1);
          await tx.settings.put(0, [["COUNTER", String(value + 1)]], T0);
        });
      await Promise.all(Array.from({ length: 10 }, bump));
      expect((await store.settings.all(0)).find((row) => row.key === "COUNTER")!.value).toBe("10");
    });

    test("a savepoint undoes only its own writes", async () => {
      const store = await fresh();
      await store.transaction(async (tx) => {
        await tx.credit.give(1, [{ amount: 10, expiresAt: null }], null, T0);
        await expect(
          tx.savepoint(async () => {
            await tx.credit.give(1, [{ amount: 99, expiresAt: null }], null, T0);
            throw new Error("skip this entry");
          }),
        ).rejects.toThrow("skip this entry");
        await tx.savepoint(async () => tx.credit.give(1, [{ amount: 5, expiresAt: null }], null, T0));
      });
      expect(await store.credit.balance(1, T0)).toBe(15);
    });
  });

  describe("idempotency keys", () => {
    const claim = (key: string, fingerprint = "f1", createdAt = T0, accountId = 1) => ({ accountId, key, fingerprint, createdAt });
    test("the first claim holds the key; later ones see it running, then its answer; keys of other accounts are their own", async () => {
      const store = await fresh();
      expect(await store.idempotency.claim(claim("k"), T0 - DAY)).toBeUndefined();
      expect(await store.idempotency.claim(claim("k", "f2"), T0 - DAY)).toMatchObject({ accountId: 1, key: "k", fingerprint: "f1", status: 0, secret: false });
      expect(await store.idempotency.claim(claim("k", "f1", T0, 2), T0 - DAY)).toBeUndefined();
      await store.idempotency.complete(1, "k", { status: 201, contentType: "application/json", body: '{"ok":true}', secret: false });
      expect(await store.idempotency.claim(claim("k"), T0 - DAY)).toMatchObject({ status: 201, contentType: "application/json", body: '{"ok":true}', secret: false });
      await store.idempotency.complete(2, "k", { status: 201, contentType: null, body: null, secret: true });
      expect(await store.idempotency.claim(claim("k", "f1", T0, 2), T0 - DAY)).toMatchObject({ status: 201, body: null, secret: true });
    });

    test("a released key is claimed again; an expired one is replaced; prune removes the old", async () => {
      const store = await fresh();
      await store.idempotency.claim(claim("a"), T0 - DAY);
      await store.idempotency.release(1, "a");
      expect(await store.idempotency.claim(claim("a", "f9"), T0 - DAY)).toBeUndefined();
      // A day later the row no longer holds the key.
      expect(await store.idempotency.claim(claim("a", "f3", T0 + DAY + 1), T0 + 1)).toBeUndefined();
      expect(await store.idempotency.claim(claim("a", "f4", T0 + DAY + 1), T0 + 1)).toMatchObject({ fingerprint: "f3" });
      await store.idempotency.claim(claim("b", "f1", T0 - 2 * DAY), T0 - 3 * DAY);
      expect(await store.idempotency.prune(T0 - DAY)).toBe(1);
      expect(await store.idempotency.prune(T0 - DAY)).toBe(0);
    });
  });

  describe("provider keys, settings, notices, operations, objects, mail", () => {
    test("provider keys belong to one tenant: another tenant's id does not exist", async () => {
      const store = await fresh();
      const key = await store.providerKeys.create(0, { level: 1, provider: "https://api.example.com/v1", secretSealed: "sealed", partialKey: "…x", status: true }, T0);
      await store.providerKeys.create(0, { level: 2, provider: "https://other.example.org", secretSealed: "s", partialKey: "…y", status: true }, T0);
      expect(await store.providerKeys.get(7, key.id)).toBeUndefined();
      expect(await store.providerKeys.update(7, key.id, { name: "x" }, T0)).toBeUndefined();
      expect(await store.providerKeys.delete(7, key.id)).toBe(false);
      expect((await store.providerKeys.list(0, { provider: "example.com" }, 1, 10)).rows.map((r) => r.id)).toEqual([key.id]);
      expect((await store.providerKeys.list(0, { level: 2 }, 1, 10)).total).toBe(1);
      await store.providerKeys.setSleep(0, key.id, { sleeping: true, sleepReason: "manual", sleepUntil: null, sleepCount: 2 });
      expect(await store.providerKeys.get(0, key.id)).toMatchObject({ sleeping: true, sleepReason: "manual", sleepCount: 2, config: '{"provider_type":"standard"}' });
      expect(await store.providerKeys.delete(0, key.id)).toBe(true);
      expect((await store.providerKeys.all(0)).map((r) => r.level)).toEqual([2]);
    });

    test("stored partial keys are read across tenants and replaced only while they hold what was read, leaving updatedAt", async () => {
      const store = await fresh();
      const a = await store.providerKeys.create(0, { level: 1, provider: "https://api.example.com/v1", secretSealed: "s", partialKey: "…clear-a", status: true }, T0);
      const b = await store.providerKeys.create(5, { level: 1, provider: "https://api.example.com/v1", secretSealed: "s", partialKey: "…clear-b", status: true }, T0);
      expect(await store.providerKeys.storedPartialKeys()).toEqual([
        { id: a.id, partialKey: "…clear-a" },
        { id: b.id, partialKey: "…clear-b" },
      ]);
      expect(await store.providerKeys.replacePartialKey(b.id, "…clear-b", "v1:sealed-b")).toBe(true);
      // Changed meanwhile (a rotation, another instance's conversion): left as it is.
      expect(await store.providerKeys.replacePartialKey(b.id, "…clear-b", "v1:other")).toBe(false);
      expect(await store.providerKeys.replacePartialKey(999_999, "…clear-a", "v1:x")).toBe(false);
      expect(await store.providerKeys.get(5, b.id)).toMatchObject({ partialKey: "v1:sealed-b", updatedAt: T0 });
      expect(await store.providerKeys.get(0, a.id)).toMatchObject({ partialKey: "…clear-a" });
    });

    test("settings are kept per tenant; put replaces, remove forgets", async () => {
      const store = await fresh();
      await store.settings.put(0, [["A", "1"], ["B", "2"]], T0);
      await store.settings.put(5, [["A", "tenant five"]], T0);
      await store.settings.put(0, [["A", "3"]], T0);
      await store.settings.remove(0, ["B"]);
      expect(await store.settings.all(0)).toEqual([{ key: "A", value: "3" }]);
      expect(await store.settings.all(5)).toEqual([{ key: "A", value: "tenant five" }]);
    });

    test("notices: the feed holds unexpired ones addressed to everyone or to the reader's chain, newest first", async () => {
      const store = await fresh();
      const base = { tenantId: 0, content: "c", authorId: 1, createdAt: T0, expiresAt: T0 + DAY };
      const all = await store.notices.create({ ...base, title: "to all", targetId: null });
      const mine = await store.notices.create({ ...base, title: "to 4", targetId: 4, createdAt: T0 + 1 });
      await store.notices.create({ ...base, title: "to 9", targetId: 9 });
      await store.notices.create({ ...base, title: "expired", targetId: null, expiresAt: T0 - 1 });
      expect((await store.notices.feed(0, [1, 4], T0, 10)).map((n) => n.id)).toEqual([mine.id, all.id]);
      expect((await store.notices.feed(3, [1, 4], T0, 10))).toEqual([]);
      expect((await store.notices.listManaged(0, 1, false, 1, 10)).total).toBe(4);
      await store.notices.remove(all.id);
      expect(await store.notices.get(0, all.id)).toBeUndefined();
    });

    test("operations: newest first, filtered by exact action or a * pattern (other pattern characters literal), target and time", async () => {
      const store = await fresh();
      const row = (action: string, at: number, targetId: number | null = null) => store.operations.write({ tenantId: 0, at, actorId: 1, action, targetId, details: "{}", ip: null });
      await row("account.create", T0, 2);
      await row("account.delete", T0 + 1, 3);
      await row("key.create", T0 + 2);
      await row("odd?[x]", T0 + 3);
      await store.operations.write({ tenantId: 9, at: T0, actorId: 1, action: "account.create", targetId: null, details: "{}", ip: null });
      expect((await store.operations.list(0, {}, 1, 10)).rows.map((r) => r.action)).toEqual(["odd?[x]", "key.create", "account.delete", "account.create"]);
      expect((await store.operations.list(0, { action: "account.*" }, 1, 10)).total).toBe(2);
      expect((await store.operations.list(0, { action: "Account.*" }, 1, 10)).total).toBe(0);
      expect((await store.operations.list(0, { action: "odd?[x]*" }, 1, 10)).total).toBe(1);
      expect((await store.operations.list(0, { action: "odd*x" }, 1, 10)).total).toBe(0);
      expect((await store.operations.list(0, { targetId: 3 }, 1, 10)).rows.map((r) => r.action)).toEqual(["account.delete"]);
      expect((await store.operations.list(0, { since: T0 + 1, until: T0 + 2 }, 1, 10)).total).toBe(2);
    });

    test("upstream objects and the soft-limit mail record", async () => {
      const store = await fresh();
      expect(await store.objects.put({ objectId: "file-1", kind: "file", accountId: 4, keyId: 2, createdAt: T0, mintedBy: null })).toBe(true);
      expect(await store.objects.put({ objectId: "file-1", kind: "file", accountId: 4, keyId: 3, createdAt: T0 + 1, mintedBy: null })).toBe(true);
      expect((await store.objects.get("file-1"))?.keyId).toBe(3);
      // Another account given the same id (another upstream numbering alike) takes nothing over.
      expect(await store.objects.put({ objectId: "file-1", kind: "file", accountId: 5, keyId: 9, createdAt: T0 + 2, mintedBy: null })).toBe(false);
      expect(await store.objects.get("file-1")).toMatchObject({ accountId: 4, keyId: 3 });
      await store.objects.put({ objectId: "ek_1", kind: "client_secret", accountId: 4, keyId: 3, createdAt: T0, mintedBy: "key-hash" });
      expect((await store.objects.get("ek_1"))?.mintedBy).toBe("key-hash");
      expect((await store.objects.ownedBy(4, "file")).map((r) => r.objectId)).toEqual(["file-1"]);
      expect(await store.objects.ownedBy(4, "thread")).toEqual([]);
      await store.objects.remove("file-1");
      expect(await store.objects.get("file-1")).toBeUndefined();

      expect(await store.softLimitMail.wasSent(4, "2026-03")).toBe(false);
      await store.softLimitMail.markSent(4, "2026-03", T0, "a@example.com");
      await store.softLimitMail.markSent(4, "2026-03", T0 + 1, "b@example.com");
      expect(await store.softLimitMail.wasSent(4, "2026-03")).toBe(true);
      expect(await store.softLimitMail.wasSent(4, "2026-04")).toBe(false);
    });
  });

  describe("values and patterns an engine could read differently", () => {
    test("nano-credit amounts, costs and token counts beyond 32 bits come back exactly, as numbers", async () => {
      const store = await fresh();
      const big = 4_503_599_627_370_497; // 2^52 + 1: exact in a double, far beyond any 32-bit column
      await store.credit.give(1, [{ amount: big, expiresAt: T0 + DAY }, { amount: 3_000_000_000, expiresAt: null }], null, T0);
      const balance = await store.credit.balance(1, T0);
      expect(typeof balance).toBe("number");
      expect(balance).toBe(big + 3_000_000_000);
      expect(await store.credit.take(1, big - 1, T0)).toEqual([{ amount: big - 1, expiresAt: T0 + DAY }]);
      const grants = await store.credit.grants(1, T0);
      expect(grants.map((g) => [g.amount, g.remaining])).toEqual([[big, 1], [3_000_000_000, 3_000_000_000]]);
      expect(grants.every((g) => typeof g.amount === "number" && typeof g.remaining === "number" && typeof g.id === "number")).toBe(true);
      await store.credit.consume(1, 3_000_000_001 + 5_000_000_000, T0);
      expect(await store.credit.balance(1, T0)).toBe(-5_000_000_000);

      const cost = 9_007_199_254_740_991; // Number.MAX_SAFE_INTEGER
      await store.usage.insert([{ requestId: "r", accountId: 1, day: "2026-03-10", createdAt: T0, endpoint: "/v1/chat/completions", status: 200, source: "upstream", latencyMs: 1, promptTokens: 5_000_000_000, costNanos: cost }]);
      await store.usage.addRollups([{ accountId: 1, day: "2026-03-10", model: "m", requests: 1, prompt: 5_000_000_000, completion: 0, reasoning: 0, cacheRead: 0, cacheWrite: 0, costNanos: cost }]);
      const [event] = await store.usage.events(0, 1);
      expect(event).toMatchObject({ promptTokens: 5_000_000_000, costNanos: cost, createdAt: T0 });
      expect(typeof event!.id).toBe("number");
      expect(await store.usage.periodTotal({ measure: "cost", accountId: 1 }, "2026-03")).toBe(cost);
      expect(await store.usage.periodTotal({ measure: "tokens", accountId: 1 }, "2026-03-10")).toBe(5_000_000_000);
      expect((await store.usage.rollups({ accountId: 1 }, { start: "2026-03-01", end: "2026-03-31" }))[0]).toMatchObject({ prompt: 5_000_000_000, costNanos: cost });
      expect((await store.usage.sumsByModel({ accountId: 1 }, { start: "2026-03-01", end: "2026-03-31" }))[0]).toMatchObject({ requests: 1, costNanos: cost });
    });

    test("an operation pattern takes every character but * literally, LIKE's and GLOB's special ones included", async () => {
      const store = await fresh();
      for (const action of ["quota_100%", "quotaX100Y", "path\\x", "pathYx"]) {
        await store.operations.write({ tenantId: 0, at: T0, actorId: 1, action, targetId: null, details: "{}", ip: null });
      }
      const actions = async (pattern: string) => (await store.operations.list(0, { action: pattern }, 1, 10)).rows.map((r) => r.action);
      expect(await actions("quota_100%*")).toEqual(["quota_100%"]);
      expect(await actions("quota_*")).toEqual(["quota_100%"]);
      expect(await actions("*%")).toEqual(["quota_100%"]);
      expect(await actions("path\\*")).toEqual(["path\\x"]);
      expect((await actions("*")).length).toBe(4);
    });
  });

  if (implementation.instances) {
    describe("two instances on one database", () => {
      test("their transactions do not interleave a credit draw", async () => {
        const store = await fresh();
        const other = await current!.second!();
        await store.credit.give(1, [{ amount: 100, expiresAt: null }], null, T0);
        const draw = (s: Store) =>
          s.transaction(async (tx) => {
            const balance = await tx.credit.balance(1, T0);
            await Bun.sleep(20);
            if (balance < 60) return false;
            await tx.credit.take(1, 60, T0);
            return true;
          });
        const drawn = await Promise.all([draw(store), draw(other), draw(store), draw(other)]);
        expect(drawn.filter(Boolean)).toHaveLength(1);
        expect(await other.credit.balance(1, T0)).toBe(40);
      });

      test("their charges outside transactions each draw from what the other left", async () => {
        const store = await fresh();
        const other = await current!.second!();
        await store.credit.give(1, Array.from({ length: 10 }, (_, i) => ({ amount: 10, expiresAt: T0 + (i + 1) * DAY })), null, T0);
        await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? store : other).credit.consume(1, 7, T0)));
        expect(await store.credit.balance(1, T0)).toBe(100 - 140);
        expect((await store.credit.grants(1, T0)).every((g) => g.remaining < 0)).toBe(true);
        const taken = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? store : other).credit.take(2, Infinity, T0)));
        expect(taken.flat()).toEqual([]);
        await store.credit.give(2, [{ amount: 50, expiresAt: null }], null, T0);
        const all = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? store : other).credit.take(2, Infinity, T0)));
        expect(all.flat()).toEqual([{ amount: 50, expiresAt: null }]);
      });
    });
  }

  describe("usage", () => {
    const rollup = (accountId: number, day: string, model: string, costNanos: number) => ({
      accountId, day, model, requests: 1, prompt: 10, completion: 5, reasoning: 0, cacheRead: 0, cacheWrite: 0, costNanos,
    });

    test("rollups add up per account, day and model; period totals read days, months, subtrees and models", async () => {
      const store = await fresh();
      const root = await store.accounts.insert(account({ isOwner: true }), "");
      const child = await store.accounts.insert(account({ parentId: root.id }), root.path);
      await store.usage.addRollups([rollup(child.id, "2026-03-10", "m", 100), rollup(child.id, "2026-03-10", "m", 50), rollup(root.id, "2026-03-09", "n", 7), rollup(child.id, "2026-04-01", "m", 1)]);
      const rows = await store.usage.rollups({ accountId: child.id }, { start: "2026-03-01", end: "2026-03-31" });
      expect(rows).toEqual([{ ...rollup(child.id, "2026-03-10", "m", 150), requests: 2, prompt: 20, completion: 10 }]);
      expect(await store.usage.periodTotal({ measure: "cost", accountId: child.id }, "2026-03-10")).toBe(150);
      expect(await store.usage.periodTotal({ measure: "requests", accountId: child.id }, "2026-03")).toBe(2);
      expect(await store.usage.periodTotal({ measure: "tokens", model: "m" }, "2026-03")).toBe(30);
      expect(await store.usage.periodTotal({ measure: "spent", subtreePath: root.path }, "2026-03")).toBe(157);
      expect(await store.usage.periodTotal({ measure: "cost", model: "m", tenantRoot: root.id }, "2026-03")).toBe(150);
      expect(await store.usage.periodTotal({ measure: "cost", model: "m", tenantRoot: root.id + 100 }, "2026-03")).toBe(0);
      // A subtree audience with or without its root.
      const under = await store.usage.sumsByModel({ path: root.path, includeRoot: false }, { start: "2026-03-01", end: "2026-03-31" });
      expect(under.map((r) => [r.model, r.costNanos])).toEqual([["m", 150]]);
      const whole = await store.usage.sumsByModel({ path: root.path, includeRoot: true }, { start: "2026-03-01", end: "2026-03-31" });
      expect(whole.map((r) => [r.model, r.costNanos])).toEqual([["m", 150], ["n", 7]]);
    });

    test("call rows come back in the order they were stored, after a given id", async () => {
      const store = await fresh();
      const call = (n: number) => ({ requestId: `r${n}`, accountId: 1, day: "2026-03-10", createdAt: T0 + n, endpoint: "/v1/chat/completions", status: 200, source: "upstream", latencyMs: n, stream: n % 2 === 0 });
      await store.usage.insert(Array.from({ length: 40 }, (_, i) => call(i)));
      const all = await store.usage.events(0, 100);
      expect(all.map((r) => r.requestId)).toEqual(Array.from({ length: 40 }, (_, i) => `r${i}`));
      expect(all[2]).toMatchObject({ stream: true, latencyMs: 2, promptTokens: 0, extra: null });
      expect((await store.usage.events(all[37]!.id, 10)).map((r) => r.requestId)).toEqual(["r38", "r39"]);
    });

    test("the ledger's version is the newest usage row's id; a balance read reports the version it saw", async () => {
      const store = await fresh();
      expect(await store.usage.latestId()).toBe(0);
      await store.credit.give(1, [{ amount: 1000, expiresAt: null }], null, T0);
      expect(await store.credit.ledgerBalance(1, T0)).toEqual({ balance: 1000, version: 0, expiring: [] });
      const call = (n: number) => ({ requestId: `r${n}`, accountId: 1, day: "2026-03-10", createdAt: T0 + n, endpoint: "/v1/chat/completions", status: 200, source: "upstream", latencyMs: n, stream: false, costNanos: 100 });
      // A usage write: its rows and their charge in one transaction; the newest id is its version.
      const version = await store.transaction(async (tx) => {
        await tx.usage.insert([call(1), call(2)]);
        await tx.credit.consume(1, 200, T0);
        return tx.usage.latestId();
      });
      const ids = (await store.usage.events(0, 10)).map((r) => r.id);
      expect(version).toBe(Math.max(...ids));
      expect(await store.credit.ledgerBalance(1, T0)).toEqual({ balance: 800, version, expiring: [] });
      // Another account's balance reads the same version.
      expect(await store.credit.ledgerBalance(2, T0)).toEqual({ balance: 0, version, expiring: [] });
      // Its expiring grants with credit left, soonest first; expired and used-up ones are not.
      await store.credit.give(2, [{ amount: 50, expiresAt: T0 + 2 * DAY }, { amount: 30, expiresAt: T0 + DAY }, { amount: 20, expiresAt: null }, { amount: 9, expiresAt: T0 - 1 }], null, T0 - DAY);
      await store.credit.give(2, [{ amount: 5, expiresAt: T0 + 3 * DAY }], null, T0);
      await store.credit.take(2, 5, T0 + 2 * DAY + 1);
      expect(await store.credit.ledgerBalance(2, T0)).toEqual({ balance: 100, version, expiring: [{ at: T0 + DAY, remaining: 30 }, { at: T0 + 2 * DAY, remaining: 50 }] });
    });

    test("a row whose strings hold NUL or a lone surrogate (a client's model name) is written with its batch", async () => {
      const store = await fresh();
      const call = (n: number, model = "m") => ({ requestId: `r${n}`, accountId: 1, day: "2026-03-10", createdAt: T0 + n, endpoint: "/v1/chat/completions", requestedModel: model, effectiveModel: model, status: 200, source: "upstream", latencyMs: n, stream: false });
      const rollups = ["a\u0000b", "a\ud800b"].map((model) => ({ accountId: 1, day: "2026-03-10", model, requests: 1, prompt: 0, completion: 0, reasoning: 0, cacheRead: 0, cacheWrite: 0, costNanos: 5 }));
      await store.usage.insert([call(1), call(2, "a\u0000b"), call(3, "a\ud800b"), call(4)]);
      await store.usage.addRollups(rollups);
      const rows = await store.usage.events(0, 10);
      expect(rows.map((r) => r.requestId)).toEqual(["r1", "r2", "r3", "r4"]);
      for (const row of rows.slice(1, 3)) expect(row.requestedModel).toMatch(/^a.+b$/);
      await store.requests.append([1, 2].map((n) => ({ requestId: `req_${n}`, tenantId: 0, accountId: 1, createdAt: T0 + n, family: "openai", endpoint: "/v1/chat/completions", requestedModel: "a\u0000\udc00b", status: 400, durationMs: 1, source: "none", userAgent: "\ud83d" })));
      expect((await store.requests.list({ tenantId: 0 }, 1, 10)).total).toBe(2);
      // Both sums are kept (on PostgreSQL under one model name, its unstorable characters replaced alike).
      const sums = await store.usage.rollups({ accountId: 1 }, { start: "2026-03-01", end: "2026-03-31" });
      expect(sums.reduce((total, r) => total + r.costNanos, 0)).toBe(10);
      // An upstream's error text, as a key's last error.
      await store.keyHealth.add([{ keyId: 1, tenantId: 0, day: "2026-03-10", requests: 1, errors: 1, latencyMs: 1, spendNanos: 0, lastErrorAt: T0, lastErrorStatus: 500, lastErrorMessage: "bad\u0000\ud800 news", lastSuccessAt: null }]);
      expect((await store.keyHealth.ofTenant(0))[0]?.lastErrorMessage).toMatch(/^bad.+news$/);
    });

    test("a usage row with a value the database cannot hold is set aside with an error in the log; its batch is written and nothing waits", async () => {
      const store = await fresh();
      const logs: string[] = [];
      const recorder = createUsageRecorder({ store, clock: createClock("UTC"), log: createLogger("info", (line) => logs.push(line)) });
      const event = (n: number, costNanos = 5, prompt = 1): UsageEvent => ({
        requestId: `req-${n}`, accountId: 1, endpoint: "/v1/chat/completions", requestedModel: "m", effectiveModel: "m", level: 1, keyId: undefined,
        status: 200, stream: false, usage: { prompt, completion: 1, reasoning: 0, cacheRead: 0, cacheWrite: 0 }, source: "upstream", latencyMs: 1, at: T0 + n, costNanos,
      });
      try {
        // A tenant's own price or upstream can make a cost or a count far past any real call's.
        const aside: number[] = [];
        recorder.onSetAside((charges) => aside.push(...charges.values()));
        for (const e of [event(1), event(2, 1e30), event(3), event(4, 5, 1e25), event(5)]) recorder.record(e);
        await recorder.flush();
        expect(recorder.backlog()).toBe(0);
        const written = (await store.usage.events(0, 10)).map((r) => r.requestId);
        expect(written).toEqual(expect.arrayContaining(["req-1", "req-3", "req-5"]));
        // What a database could not hold is named in the log, request by request.
        for (const id of ["req-2", "req-4"]) if (!written.includes(id)) expect(logs.join("\n")).toContain(id);
        // And its charge stops counting as unwritten (the recorder says so).
        if (!written.includes("req-2")) expect(aside).toContain(1e30);
        expect(store.refusedRow(new Error("connection closed"))).toBe(false);
      } finally {
        await recorder.stop();
      }
    });

    test("a row is written once: insert skips rows stored already (by request id, start, endpoint and status) and repeats, and names those it wrote", async () => {
      const store = await fresh();
      const call = (n: number, status = 200) => ({ requestId: `r${n}`, accountId: 1, day: "2026-03-10", createdAt: T0 + n, endpoint: "/v1/chat/completions", status, source: "upstream", latencyMs: n, stream: false });
      expect(await store.usage.insert([])).toEqual([]);
      const first = [call(1), call(2), call(3, 500)];
      expect(await store.usage.insert(first)).toEqual(first);
      // The same request's other attempt (another status), another start, and rows never stored are new; a repeat within the batch is one row.
      const asked = [call(1), call(3, 200), call(3, 500), call(4), { ...call(2), createdAt: T0 + 99 }, call(4)];
      const written = await store.usage.insert(asked);
      expect(written.map((r) => [r.requestId, r.status, r.createdAt - T0])).toEqual([["r3", 200, 3], ["r4", 200, 4], ["r2", 200, 99]]);
      expect(written[1]).toBe(asked[3]!);
      expect((await store.usage.events(0, 100)).map((r) => [r.requestId, r.status])).toEqual([["r1", 200], ["r2", 200], ["r3", 500], ["r3", 200], ["r4", 200], ["r2", 200]]);
      // Inside a transaction too, and two writers of one row in any order store it once.
      await Promise.all([store.transaction((tx) => tx.usage.insert([call(5)])), store.usage.insert([call(5), call(6)])]);
      expect((await store.usage.events(0, 100)).filter((r) => r.requestId === "r5")).toHaveLength(1);
    });
  });

  describe("claims' writes", () => {
    test("a claim's write notes what it released, in its transaction; the note is read back, and dropped by claim or by age", async () => {
      const store = await fresh();
      expect(await store.usage.claimWritten("#1")).toBeUndefined();
      await store.transaction((tx) => tx.usage.recordClaim("#1", { charged: new Map([[3, 2 ** 40], [4, 5]]), version: 77 }, T0));
      await store.usage.recordClaim("#2", { charged: new Map(), version: undefined }, T0 + 10);
      // A rolled-back write leaves no note.
      await expect(store.transaction(async (tx) => {
        await tx.usage.recordClaim("#3", { charged: new Map([[1, 1]]), version: 1 }, T0);
        throw new Error("rolled back");
      })).rejects.toThrow("rolled back");
      expect(await store.usage.claimWritten("#1")).toEqual({ charged: new Map([[3, 2 ** 40], [4, 5]]), version: 77 });
      expect(await store.usage.claimWritten("#2")).toEqual({ charged: new Map(), version: undefined });
      expect(await store.usage.claimWritten("#3")).toBeUndefined();
      await store.usage.forgetClaims(["#1"], 0);
      expect(await store.usage.claimWritten("#1")).toBeUndefined();
      expect(await store.usage.claimWritten("#2")).toBeDefined();
      // A note added with the claims cleared since: they go in the same step.
      await store.usage.recordClaim("#4", { charged: new Map([[1, 1]]), version: 2 }, T0 + 20, ["#2"]);
      expect(await store.usage.claimWritten("#2")).toBeUndefined();
      expect(await store.usage.claimWritten("#4")).toEqual({ charged: new Map([[1, 1]]), version: 2 });
      await store.usage.forgetClaims([], T0 + 21);
      expect(await store.usage.claimWritten("#4")).toBeUndefined();
    });
  });

  describe("copies' marks", () => {
    test("rows written as copies are marked with their writer in the transaction that wrote them; read back by identity, dropped by age", async () => {
      const store = await fresh();
      const call = (n: number, status = 200) => ({ requestId: `r${n}`, accountId: 1, day: "2026-03-10", createdAt: T0 + n, endpoint: "/v1/chat/completions", status, source: "upstream", latencyMs: n, stream: false });
      expect(await store.usage.copyWriters([call(1)])).toEqual(new Map());
      await store.transaction(async (tx) => {
        await tx.usage.insert([call(1), call(2)]);
        await tx.usage.markCopies([call(1)], "writer-a", T0 + 100);
      });
      // A rolled-back write leaves no mark; marking again keeps the first writer.
      await expect(store.transaction(async (tx) => {
        await tx.usage.markCopies([call(3)], "writer-b", T0 + 100);
        throw new Error("rolled back");
      })).rejects.toThrow("rolled back");
      await store.usage.markCopies([call(1), call(4)], "writer-b", T0 + 200);
      // By the whole identity: another attempt of r1 (another status) is another row.
      expect(await store.usage.copyWriters([call(1), call(2), call(3), call(4), call(1, 500)])).toEqual(
        new Map([[usageRowIdentity(call(1)), "writer-a"], [usageRowIdentity(call(4)), "writer-b"]]),
      );
      // Dropped a week after their write, with the claims' notes: by when they were written, not when the call was made.
      await store.usage.forgetClaims([], 0);
      expect((await store.usage.copyWriters([call(1), call(4)])).size).toBe(2);
      await store.usage.forgetClaims([], T0 + 150);
      expect(await store.usage.copyWriters([call(1), call(4)])).toEqual(new Map([[usageRowIdentity(call(4)), "writer-b"]]));
    });
  });

  describe("request log", () => {
    const call = (n: number, fields: Partial<NewRequestLogRow> = {}): NewRequestLogRow => ({
      requestId: `req_${n}`, tenantId: 0, accountId: 1, createdAt: T0 + n, family: "openai", endpoint: "/v1/chat/completions",
      requestedModel: "m", effectiveModel: "m", status: 200, durationMs: n, source: "upstream", ...fields,
    });

    test("rows come back newest first, paged, with every field as stored; a row stored again is left alone", async () => {
      const store = await fresh();
      await store.requests.append(Array.from({ length: 150 }, (_, i) => call(i)));
      await store.requests.append([call(3, { status: 500 }), call(200, { stream: true, attempts: '[{"level":1}]', keyIds: ",7,", levels: ",1,", ttfbMs: 12, promptTokens: 5, costNanos: 2 ** 40, clientIp: "10.0.0.1", userAgent: "ua" })]);
      const first = await store.requests.list({ tenantId: 0 }, 1, 10);
      expect(first.total).toBe(151);
      expect(first.rows.map((r) => r.requestId)).toEqual(["req_200", ...Array.from({ length: 9 }, (_, i) => `req_${149 - i}`)]);
      expect(first.rows[0]).toMatchObject({ stream: true, attempts: '[{"level":1}]', ttfbMs: 12, promptTokens: 5, costNanos: 2 ** 40, clientIp: "10.0.0.1", userAgent: "ua", completionTokens: 0 });
      expect((await store.requests.list({ tenantId: 0 }, 16, 10)).rows.map((r) => r.requestId)).toEqual(["req_0"]);
      expect((await store.requests.get(0, "req_3"))?.status).toBe(200);
      expect(await store.requests.get(1, "req_3")).toBeUndefined();
      expect(await store.requests.get(0, "req_nothing")).toBeUndefined();
    });

    test("filters narrow by tenant, account, subtree, model, status, key, Level, time and id", async () => {
      const store = await fresh();
      const root = await store.accounts.insert(account({ isOwner: true }), "");
      const child = await store.accounts.insert(account({ parentId: root.id }), root.path);
      const other = await store.accounts.insert(account({ isOwner: true }), "");
      await store.requests.append([
        call(1, { accountId: root.id, status: 200, keyIds: ",3,", levels: ",1," }),
        call(2, { accountId: child.id, status: 429, requestedModel: "a", effectiveModel: "b", keyIds: ",13,4,", levels: ",1,2," }),
        call(3, { accountId: child.id, status: 502, keyIds: ",31,", levels: ",2," }),
        call(4, { accountId: other.id, tenantId: 9 }),
      ]);
      const ids = async (filter: Omit<RequestLogFilter, "tenantId">, tenantId = 0) => (await store.requests.list({ tenantId, ...filter }, 1, 100)).rows.map((r) => r.requestId);
      expect(await ids({})).toEqual(["req_3", "req_2", "req_1"]);
      expect(await ids({}, 9)).toEqual(["req_4"]);
      expect(await ids({ accountId: child.id })).toEqual(["req_3", "req_2"]);
      expect(await ids({ under: child.path })).toEqual(["req_3", "req_2"]);
      expect(await ids({ under: root.path })).toEqual(["req_3", "req_2", "req_1"]);
      expect(await ids({ model: "a" })).toEqual(["req_2"]);
      expect(await ids({ model: "b" })).toEqual(["req_2"]);
      expect(await ids({ statusFrom: 500, statusTo: 599 })).toEqual(["req_3"]);
      expect(await ids({ statusFrom: 429, statusTo: 429 })).toEqual(["req_2"]);
      expect(await ids({ keyId: 3 })).toEqual(["req_1"]);
      expect(await ids({ keyId: 4 })).toEqual(["req_2"]);
      expect(await ids({ level: 2 })).toEqual(["req_3", "req_2"]);
      expect(await ids({ since: T0 + 2, until: T0 + 2 })).toEqual(["req_2"]);
      expect(await ids({ requestId: "req_1" })).toEqual(["req_1"]);
    });

    test("prune removes the calls that started before the bound, in every tenant", async () => {
      const store = await fresh();
      await store.requests.append([call(1), call(2, { tenantId: 5 }), call(3)]);
      expect(await store.requests.prune(T0 + 3)).toBe(2);
      expect((await store.requests.list({ tenantId: 0 }, 1, 10)).rows.map((r) => r.requestId)).toEqual(["req_3"]);
      expect(await store.requests.prune(T0 + 3)).toBe(0);
    });
  });

  describe("key health", () => {
    const delta = (keyId: number, day: string, fields: Partial<NewKeyHealthRow> = {}): NewKeyHealthRow => ({
      keyId,
      tenantId: 0,
      day,
      requests: 1,
      errors: 0,
      latencyMs: 100,
      spendNanos: 5_000_000_000,
      lastErrorAt: null,
      lastErrorStatus: null,
      lastErrorMessage: null,
      lastSuccessAt: null,
      ...fields,
    });
    const byKey = async (store: Store, tenantId = 0) => new Map((await store.keyHealth.ofTenant(tenantId)).map((row) => [row.keyId, row]));

    test("batches add up on the same day, start afresh on a newer one and leave the stored day alone for an older one; the latest error and success win", async () => {
      const store = await fresh();
      await store.keyHealth.add([delta(1, "2026-03-10", { requests: 3, errors: 1, lastErrorAt: T0, lastErrorStatus: 500, lastErrorMessage: "boom" }), delta(2, "2026-03-10", { tenantId: 9 })]);
      await store.transaction((tx) => tx.keyHealth.add([delta(1, "2026-03-10", { requests: 2, latencyMs: 50, lastSuccessAt: T0 + 5 })]));
      let row = (await byKey(store)).get(1)!;
      expect(row).toMatchObject({ day: "2026-03-10", requests: 5, errors: 1, latencyMs: 150, spendNanos: 10_000_000_000, lastErrorAt: T0, lastErrorStatus: 500, lastErrorMessage: "boom", lastSuccessAt: T0 + 5 });
      // Another tenant's key is not among this tenant's.
      expect((await byKey(store)).has(2)).toBe(false);
      expect((await byKey(store, 9)).get(2)).toMatchObject({ requests: 1 });
      // An older error does not replace a newer one; a batch of an older day adds nothing.
      await store.keyHealth.add([delta(1, "2026-03-09", { requests: 7, lastErrorAt: T0 - DAY, lastErrorStatus: 429, lastErrorMessage: "old" })]);
      row = (await byKey(store)).get(1)!;
      expect(row).toMatchObject({ day: "2026-03-10", requests: 5, lastErrorStatus: 500, lastErrorMessage: "boom" });
      // A newer day starts over, keeping the last error and success; a later error replaces the stored one, its null status too.
      await store.keyHealth.add([delta(1, "2026-03-11", { requests: 1, lastErrorAt: T0 + DAY, lastErrorStatus: null, lastErrorMessage: "timeout" })]);
      row = (await byKey(store)).get(1)!;
      expect(row).toMatchObject({ day: "2026-03-11", requests: 1, errors: 0, latencyMs: 100, spendNanos: 5_000_000_000, lastErrorAt: T0 + DAY, lastErrorStatus: null, lastErrorMessage: "timeout", lastSuccessAt: T0 + 5 });
    });
  });
});
