import { and, count, eq, sql, type SQL } from "drizzle-orm";
import { providerKeys } from "../schema/provider-keys.ts";
import type { ProviderKeyFilter, ProviderKeyStore } from "../store.ts";
import type { Db } from "./connection.ts";
import type { Synchronous } from "./synchronous.ts";

export function sqliteProviderKeys(db: Db): Synchronous<ProviderKeyStore> {
  const mine = (tenantId: number) => eq(providerKeys.tenantId, tenantId);
  const byId = (tenantId: number, id: number) => and(mine(tenantId), eq(providerKeys.id, id));
  const where = (tenantId: number, filter: ProviderKeyFilter): SQL | undefined => {
    const parts: SQL[] = [mine(tenantId)];
    if (filter.id !== undefined) parts.push(eq(providerKeys.id, filter.id));
    if (filter.level !== undefined) parts.push(eq(providerKeys.level, filter.level));
    // A plain substring, ASCII case ignored (as LIKE did): `_` and `%` are characters of a URL, not wildcards.
    if (filter.provider) parts.push(sql`instr(lower(${providerKeys.provider}), lower(${filter.provider})) > 0`);
    return and(...parts);
  };
  return {
    list(tenantId, filter, page, size) {
      const condition = where(tenantId, filter);
      const total = db.select({ n: count() }).from(providerKeys).where(condition).get()?.n ?? 0;
      const rows = db
        .select()
        .from(providerKeys)
        .where(condition)
        .orderBy(providerKeys.id)
        .limit(size)
        .offset((page - 1) * size)
        .all();
      return { rows, total };
    },
    all: (tenantId) => db.select().from(providerKeys).where(mine(tenantId)).orderBy(providerKeys.id).all(),
    get: (tenantId, id) => db.select().from(providerKeys).where(byId(tenantId, id)).get(),
    create: (tenantId, values, now) =>
      db
        .insert(providerKeys)
        .values({ name: "", config: JSON.stringify({ provider_type: "standard" }), ...values, tenantId, createdAt: now, updatedAt: now })
        .returning()
        .get(),
    update: (tenantId, id, values, now) => db.update(providerKeys).set({ ...values, updatedAt: now }).where(byId(tenantId, id)).returning().get(),
    delete: (tenantId, id) => db.delete(providerKeys).where(byId(tenantId, id)).returning({ id: providerKeys.id }).all().length > 0,
    setSleep(tenantId, id, sleep) {
      db.update(providerKeys).set(sleep).where(byId(tenantId, id)).run();
    },
    storedPartialKeys: () => db.select({ id: providerKeys.id, partialKey: providerKeys.partialKey }).from(providerKeys).orderBy(providerKeys.id).all(),
    replacePartialKey: (id, from, to) =>
      db
        .update(providerKeys)
        .set({ partialKey: to })
        .where(and(eq(providerKeys.id, id), eq(providerKeys.partialKey, from)))
        .returning({ id: providerKeys.id })
        .all().length > 0,
  };
}
