import { and, count, desc, eq, gt, gte, inArray, isNull, lte, or, sql, type SQL } from "drizzle-orm";
import type { NoticeStore, OperationStore, SettingsStore, SoftLimitMailStore, UpstreamObjectStore } from "../store.ts";
import type { Scope } from "./db.ts";
import { upstreamObjects } from "./schema/affinity.ts";
import { notices, softLimitNotices } from "./schema/notices.ts";
import { operationLog } from "./schema/operation-log.ts";
import { settings } from "./schema/settings.ts";

export function postgresSettings({ db }: Scope): SettingsStore {
  return {
    all: (tenantId) => db.select({ key: settings.key, value: settings.value }).from(settings).where(eq(settings.tenantId, tenantId)),
    async put(tenantId, entries, now) {
      // One statement, so the items land together; the last value of a key repeated in `entries` wins, as on SQLite.
      const latest = new Map(entries.map(([key, value]) => [key, value]));
      if (latest.size === 0) return;
      await db
        .insert(settings)
        .values([...latest].map(([key, value]) => ({ tenantId, key, value, updatedAt: now })))
        .onConflictDoUpdate({ target: [settings.tenantId, settings.key], set: { value: sql`excluded.value`, updatedAt: now } });
    },
    async remove(tenantId, keys) {
      if (keys.length > 0) await db.delete(settings).where(and(eq(settings.tenantId, tenantId), inArray(settings.key, [...keys])));
    },
  };
}

const newestFirst = [desc(notices.createdAt), desc(notices.id)];

export function postgresNotices({ db }: Scope): NoticeStore {
  return {
    create: async (notice) => (await db.insert(notices).values(notice).returning())[0]!,
    get: async (tenantId, id) => (await db.select().from(notices).where(and(eq(notices.tenantId, tenantId), eq(notices.id, id))))[0],
    async remove(id) {
      await db.delete(notices).where(eq(notices.id, id));
    },
    async listManaged(tenantId, authorId, withSystem, page, size) {
      const mine = withSystem ? or(eq(notices.authorId, authorId), isNull(notices.targetId)) : eq(notices.authorId, authorId);
      const where: SQL | undefined = and(eq(notices.tenantId, tenantId), mine);
      const [total, rows] = await Promise.all([
        db.select({ n: count() }).from(notices).where(where),
        db
          .select()
          .from(notices)
          .where(where)
          .orderBy(...newestFirst)
          .limit(size)
          .offset((page - 1) * size),
      ]);
      return { rows, total: total[0]?.n ?? 0 };
    },
    feed(tenantId, targetIds, now, limit) {
      const addressed = targetIds.length > 0 ? or(isNull(notices.targetId), inArray(notices.targetId, [...targetIds])) : isNull(notices.targetId);
      return db
        .select()
        .from(notices)
        .where(and(eq(notices.tenantId, tenantId), addressed, gt(notices.expiresAt, now)))
        .orderBy(...newestFirst)
        .limit(limit);
    },
  };
}

/** `*` → LIKE's `%`; LIKE's own special characters (`%`, `_`, the `\` escape) taken literally. LIKE is case-sensitive here, as patterns are everywhere in the product. */
export function likeOf(pattern: string): string {
  return pattern.replace(/[\\%_]/g, (c) => `\\${c}`).replace(/\*/g, "%");
}

export function postgresOperations({ db }: Scope): OperationStore {
  return {
    async write(row) {
      await db.insert(operationLog).values(row);
    },
    async list(tenantId, filter, page, size) {
      const parts: SQL[] = [eq(operationLog.tenantId, tenantId)];
      if (filter.action !== undefined) {
        parts.push(filter.action.includes("*") ? sql`${operationLog.action} LIKE ${likeOf(filter.action)} ESCAPE '\\'` : eq(operationLog.action, filter.action));
      }
      if (filter.targetId !== undefined) parts.push(eq(operationLog.targetId, filter.targetId));
      if (filter.since !== undefined) parts.push(gte(operationLog.at, filter.since));
      if (filter.until !== undefined) parts.push(lte(operationLog.at, filter.until));
      const where = and(...parts);
      const [total, rows] = await Promise.all([
        db.select({ n: count() }).from(operationLog).where(where),
        db
          .select()
          .from(operationLog)
          .where(where)
          .orderBy(desc(operationLog.at), desc(operationLog.id))
          .limit(size)
          .offset((page - 1) * size),
      ]);
      return { rows, total: total[0]?.n ?? 0 };
    },
  };
}

export function postgresObjects({ db }: Scope): UpstreamObjectStore {
  return {
    async put(row) {
      const written = await db
        .insert(upstreamObjects)
        .values(row)
        .onConflictDoUpdate({ target: upstreamObjects.objectId, set: row, setWhere: eq(upstreamObjects.accountId, row.accountId) })
        .returning({ objectId: upstreamObjects.objectId });
      return written.length > 0;
    },
    get: async (objectId) => (await db.select().from(upstreamObjects).where(eq(upstreamObjects.objectId, objectId)))[0],
    async remove(objectId) {
      await db.delete(upstreamObjects).where(eq(upstreamObjects.objectId, objectId));
    },
    ownedBy: (accountId, kind) => db.select().from(upstreamObjects).where(and(eq(upstreamObjects.accountId, accountId), eq(upstreamObjects.kind, kind))),
  };
}

export function postgresSoftLimitMail({ db }: Scope): SoftLimitMailStore {
  return {
    wasSent: async (accountId, month) =>
      (
        await db
          .select({ accountId: softLimitNotices.accountId })
          .from(softLimitNotices)
          .where(and(eq(softLimitNotices.accountId, accountId), eq(softLimitNotices.month, month)))
      ).length > 0,
    async markSent(accountId, month, at, recipient) {
      await db.insert(softLimitNotices).values({ accountId, month, sentAt: at, recipient }).onConflictDoNothing();
    },
  };
}
