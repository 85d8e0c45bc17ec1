import { and, count, eq, sql, type SQL } from "drizzle-orm";
import type { ProviderKeyFilter, ProviderKeyStore } from "../store.ts";
import type { Scope } from "./db.ts";
import { providerKeys } from "./schema/provider-keys.ts";

export function postgresProviderKeys({ db }: Scope): ProviderKeyStore {
  const mine = (tenantId: number) => eq(providerKeys.tenantId, tenantId);
  const byId = (tenantId: number, id: number) => and(mine(tenantId), eq(providerKeys.id, id));
  const where = (tenantId: number, filter: ProviderKeyFilter): SQL | undefined => {
    const parts: SQL[] = [mine(tenantId)];
    if (filter.id !== undefined) parts.push(eq(providerKeys.id, filter.id));
    if (filter.level !== undefined) parts.push(eq(providerKeys.level, filter.level));
    // A plain substring, case ignored, as on SQLite: `_` and `%` are characters of a URL, not wildcards.
    if (filter.provider) parts.push(sql`strpos(lower(${providerKeys.provider}), lower(${filter.provider}::text)) > 0`);
    return and(...parts);
  };
  return {
    async list(tenantId, filter, page, size) {
      const condition = where(tenantId, filter);
      const [total, rows] = await Promise.all([
        db.select({ n: count() }).from(providerKeys).where(condition),
        db
          .select()
          .from(providerKeys)
          .where(condition)
          .orderBy(providerKeys.id)
          .limit(size)
          .offset((page - 1) * size),
      ]);
      return { rows, total: total[0]?.n ?? 0 };
    },
    all: (tenantId) => db.select().from(providerKeys).where(mine(tenantId)).orderBy(providerKeys.id),
    get: async (tenantId, id) => (await db.select().from(providerKeys).where(byId(tenantId, id)))[0],
    create: async (tenantId, values, now) =>
      (
        await db
          .insert(providerKeys)
          .values({ name: "", config: JSON.stringify({ provider_type: "standard" }), ...values, tenantId, createdAt: now, updatedAt: now })
          .returning()
      )[0]!,
    update: async (tenantId, id, values, now) => (await db.update(providerKeys).set({ ...values, updatedAt: now }).where(byId(tenantId, id)).returning())[0],
    delete: async (tenantId, id) => (await db.delete(providerKeys).where(byId(tenantId, id)).returning({ id: providerKeys.id })).length > 0,
    async setSleep(tenantId, id, sleep) {
      await db.update(providerKeys).set(sleep).where(byId(tenantId, id));
    },
    storedPartialKeys: () => db.select({ id: providerKeys.id, partialKey: providerKeys.partialKey }).from(providerKeys).orderBy(providerKeys.id),
    replacePartialKey: async (id, from, to) =>
      (
        await db
          .update(providerKeys)
          .set({ partialKey: to })
          .where(and(eq(providerKeys.id, id), eq(providerKeys.partialKey, from)))
          .returning({ id: providerKeys.id })
      ).length > 0,
  };
}
