import { and, asc, count, desc, eq, inArray, isNull, like, ne, sql, type SQL } from "drizzle-orm";
import { rootBeforePath, rootIdOf } from "../account-root.ts";
import type { AccountFilter, AccountIdentity, AccountOrder, AccountStore } from "../store.ts";
import type { Scope } from "./db.ts";
import { accounts } from "./schema/accounts.ts";

const live = isNull(accounts.deletedAt);

/** Names and emails order by code point, as SQLite's binary collation does, whatever the database's collation. */
const binary = (column: typeof accounts.name | typeof accounts.email) => sql`${column} COLLATE "C"`;

const ORDERS: Record<AccountOrder, SQL[]> = {
  id: [asc(accounts.id)],
  "-id": [desc(accounts.id)],
  name: [asc(binary(accounts.name))],
  "-name": [desc(binary(accounts.name))],
  email: [asc(binary(accounts.email))],
  "-email": [desc(binary(accounts.email))],
  created: [asc(accounts.createdAt), asc(accounts.id)],
  "-created": [desc(accounts.createdAt), desc(accounts.id)],
  level: [asc(accounts.depth), asc(accounts.id)],
  "-level": [desc(accounts.depth), desc(accounts.id)],
};

type Lookup = Parameters<AccountStore["find"]>[1];

/** One live account of the tree rooted at `rootId`, by id, email or name (the per-tree unique indexes answer it). */
function lookup(rootId: number, by: Lookup): SQL {
  const match = "id" in by ? eq(accounts.id, by.id) : "email" in by ? eq(accounts.email, by.email) : eq(accounts.name, by.name);
  return and(eq(accounts.rootId, rootId), match, live)!;
}

const byField = (field: "email" | "name", value: string): Lookup => (field === "email" ? { email: value } : { name: value });

/** The live owner with this email; `is_owner` as the partial unique index states it, so the index answers. */
const liveOwnerWith = (email: string): SQL => and(eq(accounts.email, email), sql`${accounts.isOwner}`, live)!;

function conditionOf(filter: AccountFilter): SQL {
  const within = filter.within;
  const parts: SQL[] = [
    live,
    // Paths hold only digits and slashes: nothing in the prefix needs escaping.
    "parentId" in within ? eq(accounts.parentId, within.parentId) : and(like(accounts.path, `${within.path}%`), ne(accounts.id, within.exceptId))!,
  ];
  if (filter.id !== undefined) parts.push(eq(accounts.id, filter.id));
  if (filter.level !== undefined) parts.push(eq(accounts.depth, filter.level));
  if (filter.nameContains) parts.push(sql`strpos(lower(${accounts.name}), ${filter.nameContains.toLowerCase()}) > 0`);
  if (filter.emailContains) parts.push(sql`strpos(${accounts.email}, ${filter.emailContains.toLowerCase()}) > 0`);
  return and(...parts)!;
}

export function postgresAccounts({ db, atomic }: Scope): AccountStore {
  const first = async <T>(rows: Promise<T[]>): Promise<T | undefined> => (await rows)[0];
  return {
    byKeyHash: (hash) => first(db.select().from(accounts).where(and(eq(accounts.keyHash, hash), live))),
    byId: (id) => first(db.select().from(accounts).where(and(eq(accounts.id, id), live))),
    anyById: (id) => first(db.select().from(accounts).where(eq(accounts.id, id))),
    find: (rootId, by) => first(db.select().from(accounts).where(lookup(rootId, by))),
    liveIdWith: async (rootId, field, value) => (await first(db.select({ id: accounts.id }).from(accounts).where(lookup(rootId, byField(field, value)))))?.id,
    liveOwnerIdWith: async (email) => (await first(db.select({ id: accounts.id }).from(accounts).where(liveOwnerWith(email))))?.id,
    countLive: async () => (await first(db.select({ n: count() }).from(accounts).where(live)))?.n ?? 0,
    async list(filter, order, page, size) {
      const where = conditionOf(filter);
      const [total, rows] = await Promise.all([
        first(db.select({ n: count() }).from(accounts).where(where)),
        db
          .select()
          .from(accounts)
          .where(where)
          .orderBy(...ORDERS[order])
          .limit(size)
          .offset((page - 1) * size),
      ]);
      return { rows, total: total?.n ?? 0 };
    },
    insert: (values, parentPath) =>
      atomic(async (db) => {
        const [inserted] = await db.insert(accounts).values({ ...values, rootId: rootBeforePath(parentPath) }).returning({ id: accounts.id });
        const path = `${parentPath || "/"}${inserted!.id}/`;
        const [row] = await db
          .update(accounts)
          .set({ path, rootId: rootIdOf(path) })
          .where(eq(accounts.id, inserted!.id))
          .returning();
        return row!;
      }),
    async update(id, columns) {
      const [row] = await db.update(accounts).set(columns).where(eq(accounts.id, id)).returning();
      return row!;
    },
    async replaceKey(id, expectedHash, hash, prefix, now) {
      const rotated = await db
        .update(accounts)
        .set({ keyHash: hash, keyPrefix: prefix, updatedAt: now })
        .where(and(eq(accounts.id, id), eq(accounts.keyHash, expectedHash), live))
        .returning({ id: accounts.id });
      return rotated.length > 0;
    },
    async markDeleted(id, now, deadKeyHash) {
      await db.update(accounts).set({ deletedAt: now, updatedAt: now, keyHash: deadKeyHash }).where(eq(accounts.id, id));
    },
    hasLiveChild: async (id) => (await first(db.select({ id: accounts.id }).from(accounts).where(and(eq(accounts.parentId, id), live)).limit(1))) !== undefined,
    async identities(ids) {
      const found = new Map<number, AccountIdentity>();
      for (let i = 0; i < ids.length; i += 500) {
        const rows = await db
          .select({ id: accounts.id, name: accounts.name, alias: accounts.alias, email: accounts.email })
          .from(accounts)
          .where(inArray(accounts.id, ids.slice(i, i + 500)));
        for (const row of rows) found.set(row.id, row);
      }
      return found;
    },
  };
}
