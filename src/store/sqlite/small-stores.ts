import { and, desc, eq, gt, gte, inArray, isNull, lte, or, sql, type SQL } from "drizzle-orm";
import { upstreamObjects } from "../schema/affinity.ts";
import { notices, softLimitNotices } from "../schema/notices.ts";
import { operationLog } from "../schema/operation-log.ts";
import { settings } from "../schema/settings.ts";
import type { NoticeStore, OperationStore, SettingsStore, SoftLimitMailStore, UpstreamObjectStore } from "../store.ts";
import type { Connection, Db } from "./connection.ts";
import type { Synchronous } from "./synchronous.ts";

export function sqliteSettings({ db, sqlite }: Connection): Synchronous<SettingsStore> {
  const put = sqlite.transaction((tenantId: number, entries: ReadonlyArray<readonly [string, string]>, now: number) => {
    for (const [key, value] of entries) {
      db.insert(settings)
        .values({ tenantId, key, value, updatedAt: now })
        .onConflictDoUpdate({ target: [settings.tenantId, settings.key], set: { value, updatedAt: now } })
        .run();
    }
  });
  return {
    all: (tenantId) => db.select({ key: settings.key, value: settings.value }).from(settings).where(eq(settings.tenantId, tenantId)).all(),
    put: (tenantId, entries, now) => put(tenantId, entries, now),
    remove(tenantId, keys) {
      if (keys.length > 0) db.delete(settings).where(and(eq(settings.tenantId, tenantId), inArray(settings.key, [...keys]))).run();
    },
  };
}

const newestFirst = [desc(notices.createdAt), desc(notices.id)];

export function sqliteNotices(db: Db): Synchronous<NoticeStore> {
  return {
    create: (notice) => db.insert(notices).values(notice).returning().get(),
    get: (tenantId, id) => db.select().from(notices).where(and(eq(notices.tenantId, tenantId), eq(notices.id, id))).get(),
    remove(id) {
      db.delete(notices).where(eq(notices.id, id)).run();
    },
    listManaged(tenantId, authorId, withSystem, page, size) {
      const mine = withSystem ? or(eq(notices.authorId, authorId), isNull(notices.targetId)) : eq(notices.authorId, authorId);
      const where: SQL | undefined = and(eq(notices.tenantId, tenantId), mine);
      const total = db.select({ n: sql<number>`count(*)` }).from(notices).where(where).get()?.n ?? 0;
      const rows = db
        .select()
        .from(notices)
        .where(where)
        .orderBy(...newestFirst)
        .limit(size)
        .offset((page - 1) * size)
        .all();
      return { rows, total };
    },
    feed(tenantId, targetIds, now, limit) {
      const addressed = targetIds.length > 0 ? or(isNull(notices.targetId), inArray(notices.targetId, [...targetIds])) : isNull(notices.targetId);
      return db
        .select()
        .from(notices)
        .where(and(eq(notices.tenantId, tenantId), addressed, gt(notices.expiresAt, now)))
        .orderBy(...newestFirst)
        .limit(limit)
        .all();
    },
  };
}

/** `*` → GLOB's `*`; GLOB's other special characters taken literally (case-sensitive, like every pattern of the product). */
function globOf(pattern: string): string {
  return pattern.replace(/[?[]/g, (c) => `[${c}]`);
}

export function sqliteOperations(db: Db): Synchronous<OperationStore> {
  return {
    write(row) {
      db.insert(operationLog).values(row).run();
    },
    list(tenantId, filter, page, size) {
      const parts: SQL[] = [eq(operationLog.tenantId, tenantId)];
      if (filter.action !== undefined) {
        parts.push(filter.action.includes("*") ? sql`${operationLog.action} GLOB ${globOf(filter.action)}` : eq(operationLog.action, filter.action));
      }
      if (filter.targetId !== undefined) parts.push(eq(operationLog.targetId, filter.targetId));
      if (filter.since !== undefined) parts.push(gte(operationLog.at, filter.since));
      if (filter.until !== undefined) parts.push(lte(operationLog.at, filter.until));
      const where = and(...parts);
      const total = db.select({ n: sql<number>`count(*)` }).from(operationLog).where(where).get()?.n ?? 0;
      const rows = db
        .select()
        .from(operationLog)
        .where(where)
        .orderBy(desc(operationLog.at), desc(operationLog.id))
        .limit(size)
        .offset((page - 1) * size)
        .all();
      return { rows, total };
    },
  };
}

export function sqliteObjects(db: Db): Synchronous<UpstreamObjectStore> {
  return {
    put(row) {
      const written = db
        .insert(upstreamObjects)
        .values(row)
        .onConflictDoUpdate({ target: upstreamObjects.objectId, set: row, setWhere: eq(upstreamObjects.accountId, row.accountId) })
        .returning({ objectId: upstreamObjects.objectId })
        .all();
      return written.length > 0;
    },
    get: (objectId) => db.select().from(upstreamObjects).where(eq(upstreamObjects.objectId, objectId)).get(),
    remove(objectId) {
      db.delete(upstreamObjects).where(eq(upstreamObjects.objectId, objectId)).run();
    },
    ownedBy: (accountId, kind) =>
      db.select().from(upstreamObjects).where(and(eq(upstreamObjects.accountId, accountId), eq(upstreamObjects.kind, kind))).all(),
  };
}

export function sqliteSoftLimitMail(db: Db): Synchronous<SoftLimitMailStore> {
  return {
    wasSent: (accountId, month) =>
      db
        .select({ accountId: softLimitNotices.accountId })
        .from(softLimitNotices)
        .where(and(eq(softLimitNotices.accountId, accountId), eq(softLimitNotices.month, month)))
        .get() !== undefined,
    markSent(accountId, month, at, recipient) {
      db.insert(softLimitNotices).values({ accountId, month, sentAt: at, recipient }).onConflictDoNothing().run();
    },
  };
}
