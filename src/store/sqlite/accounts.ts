import { and, asc, desc, eq, inArray, isNull, ne, sql, type SQL } from "drizzle-orm";
import { rootBeforePath, rootIdOf } from "../account-root.ts";
import { accounts } from "../schema/accounts.ts";
import type { AccountFilter, AccountIdentity, AccountOrder, AccountStore } from "../store.ts";
import type { Connection } from "./connection.ts";
import type { Synchronous } from "./synchronous.ts";
import { pathsUnder } from "../key-ranges.ts";

const live = isNull(accounts.deletedAt);

const ORDERS: Record<AccountOrder, SQL[]> = {
  id: [asc(accounts.id)],
  "-id": [desc(accounts.id)],
  name: [asc(accounts.name)],
  "-name": [desc(accounts.name)],
  email: [asc(accounts.email)],
  "-email": [desc(accounts.email)],
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
    "parentId" in within ? eq(accounts.parentId, within.parentId) : and(pathsUnder(accounts.path, within.path), ne(accounts.id, within.exceptId))!,
  ];
  if (filter.id !== undefined) parts.push(eq(accounts.id, filter.id));
  if (filter.level !== undefined) parts.push(eq(accounts.depth, filter.level));
  if (filter.nameContains) parts.push(sql`instr(lower(${accounts.name}), ${filter.nameContains.toLowerCase()}) > 0`);
  if (filter.emailContains) parts.push(sql`instr(${accounts.email}, ${filter.emailContains.toLowerCase()}) > 0`);
  return and(...parts)!;
}

export function sqliteAccounts({ db, sqlite }: Connection): Synchronous<AccountStore> {
  // Made once: several statements that commit together (a savepoint inside an open transaction).
  const insert = sqlite.transaction((values: Parameters<AccountStore["insert"]>[0], parentPath: string) => {
    const inserted = db.insert(accounts).values({ ...values, rootId: rootBeforePath(parentPath) }).returning().get();
    const path = `${parentPath || "/"}${inserted.id}/`;
    return db
      .update(accounts)
      .set({ path, rootId: rootIdOf(path) })
      .where(eq(accounts.id, inserted.id))
      .returning()
      .get();
  });
  return {
    byKeyHash: (hash) => db.select().from(accounts).where(and(eq(accounts.keyHash, hash), live)).get(),
    byId: (id) => db.select().from(accounts).where(and(eq(accounts.id, id), live)).get(),
    anyById: (id) => db.select().from(accounts).where(eq(accounts.id, id)).get(),
    find: (rootId, by) => db.select().from(accounts).where(lookup(rootId, by)).get(),
    liveIdWith: (rootId, field, value) => db.select({ id: accounts.id }).from(accounts).where(lookup(rootId, byField(field, value))).get()?.id,
    liveOwnerIdWith: (email) => db.select({ id: accounts.id }).from(accounts).where(liveOwnerWith(email)).get()?.id,
    countLive: () => db.select({ n: sql<number>`count(*)` }).from(accounts).where(live).get()?.n ?? 0,
    list(filter, order, page, size) {
      const where = conditionOf(filter);
      const total = db.select({ n: sql<number>`count(*)` }).from(accounts).where(where).get()?.n ?? 0;
      const rows = db
        .select()
        .from(accounts)
        .where(where)
        .orderBy(...ORDERS[order])
        .limit(size)
        .offset((page - 1) * size)
        .all();
      return { rows, total };
    },
    insert: (values, parentPath) => insert(values, parentPath),
    update: (id, columns) => db.update(accounts).set(columns).where(eq(accounts.id, id)).returning().get(),
    replaceKey(id, expectedHash, hash, prefix, now) {
      const rotated = db
        .update(accounts)
        .set({ keyHash: hash, keyPrefix: prefix, updatedAt: now })
        .where(and(eq(accounts.id, id), eq(accounts.keyHash, expectedHash), live))
        .returning({ id: accounts.id })
        .get();
      return rotated !== undefined;
    },
    markDeleted(id, now, deadKeyHash) {
      db.update(accounts).set({ deletedAt: now, updatedAt: now, keyHash: deadKeyHash }).where(eq(accounts.id, id)).run();
    },
    hasLiveChild: (id) => db.select({ id: accounts.id }).from(accounts).where(and(eq(accounts.parentId, id), live)).get() !== undefined,
    identities(ids) {
      const found = new Map<number, AccountIdentity>();
      for (let i = 0; i < ids.length; i += 500) {
        const rows = db
          .select({ id: accounts.id, name: accounts.name, alias: accounts.alias, email: accounts.email })
          .from(accounts)
          .where(inArray(accounts.id, ids.slice(i, i + 500)))
          .all();
        for (const row of rows) found.set(row.id, row);
      }
      return found;
    },
  };
}
