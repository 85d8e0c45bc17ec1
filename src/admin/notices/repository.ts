import { and, desc, eq, gt, inArray, isNull, or, sql, type SQL } from "drizzle-orm";
import type { Store } from "../../store/db.ts";
import { notices, type NoticeRow } from "../../store/schema/notices.ts";

export interface NewNotice {
  tenantId: number;
  title: string;
  content: string;
  authorId: number;
  /** null: system-wide. */
  targetId: number | null;
  createdAt: number;
  expiresAt: number;
}

/** Most notices `GET /dashboard/news` returns: the newest ones. */
export const MAX_FEED = 100;

/** Storage of broadcast notices (spec 2.5); the HTTP layer decides who may do what. */
export interface NoticesRepository {
  create(notice: NewNotice): NoticeRow;
  get(tenantId: number, id: number): NoticeRow | undefined;
  remove(id: number): void;
  /** Notices `authorId` published, plus every system-wide one when `withSystem`; newest first, expired included. */
  listManaged(tenantId: number, authorId: number, withSystem: boolean, page: number, size: number): { rows: NoticeRow[]; total: number };
  /** Unexpired notices addressed to an account with these ancestors (itself included): system-wide and targeted at any of them. */
  feed(tenantId: number, ancestorIds: readonly number[], now: number): NoticeRow[];
}

const newestFirst = [desc(notices.createdAt), desc(notices.id)];

export function createNoticesRepository(store: Store): NoticesRepository {
  const { db } = store;
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
    feed(tenantId, ancestorIds, now) {
      const addressed = ancestorIds.length > 0 ? or(isNull(notices.targetId), inArray(notices.targetId, [...ancestorIds])) : isNull(notices.targetId);
      return db
        .select()
        .from(notices)
        .where(and(eq(notices.tenantId, tenantId), addressed, gt(notices.expiresAt, now)))
        .orderBy(...newestFirst)
        .limit(MAX_FEED)
        .all();
    },
  };
}
