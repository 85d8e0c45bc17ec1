import { and, count, eq, like, type SQL } from "drizzle-orm";
import type { Clock } from "../../core/clock.ts";
import type { Sealer } from "../../store/crypto.ts";
import type { Store } from "../../store/db.ts";
import { providerKeys, type ProviderKeyRow } from "../../store/schema/provider-keys.ts";
import type { ProviderConfig } from "../../routing/provider-config.ts";
import type { SleepReason } from "../../routing/pool-key.ts";

/** Fields a create or update writes; the secret in clear, sealed here. */
export interface ProviderKeyInput {
  name?: string;
  level?: number;
  provider?: string;
  secret?: string;
  noSleep?: boolean;
  status?: boolean;
  config?: ProviderConfig;
}

export interface ProviderKeyFilter {
  id?: number;
  level?: number;
  /** Substring of the Provider URL. */
  provider?: string;
}

export interface SleepState {
  sleeping: boolean;
  reason: SleepReason | null;
  until: number | null;
  count: number;
}

/** The display form of a secret: an ellipsis and its last 20 characters (spec 2.1). */
export function partialKey(secret: string): string {
  return `…${secret.slice(-20)}`;
}

export interface ProviderKeysRepository {
  list(filter: ProviderKeyFilter, page: number, size: number): { rows: ProviderKeyRow[]; total: number };
  all(): ProviderKeyRow[];
  get(id: number): ProviderKeyRow | undefined;
  create(input: Required<Pick<ProviderKeyInput, "level" | "provider" | "secret" | "status">> & ProviderKeyInput): ProviderKeyRow;
  update(id: number, input: ProviderKeyInput): ProviderKeyRow | undefined;
  delete(id: number): boolean;
  setSleep(id: number, state: SleepState): void;
  /** Opens a row's sealed secret. */
  secretOf(row: ProviderKeyRow): string;
}

export function createProviderKeysRepository(deps: { store: Store; sealer: Sealer; clock: Clock; tenantId?: number }): ProviderKeysRepository {
  const { db } = deps.store;
  const tenantId = deps.tenantId ?? 0;
  const mine = eq(providerKeys.tenantId, tenantId);
  const byId = (id: number) => and(mine, eq(providerKeys.id, id));
  const where = (filter: ProviderKeyFilter): SQL | undefined => {
    const parts: SQL[] = [mine];
    if (filter.id !== undefined) parts.push(eq(providerKeys.id, filter.id));
    if (filter.level !== undefined) parts.push(eq(providerKeys.level, filter.level));
    if (filter.provider) parts.push(like(providerKeys.provider, `%${filter.provider.replace(/[%_]/g, "")}%`));
    return and(...parts);
  };
  const sealed = (input: ProviderKeyInput) => ({
    ...(input.name !== undefined && { name: input.name }),
    ...(input.level !== undefined && { level: input.level }),
    ...(input.provider !== undefined && { provider: input.provider }),
    ...(input.secret !== undefined && {
      secretSealed: deps.sealer.seal(input.secret),
      partialKey: partialKey(input.secret),
    }),
    ...(input.noSleep !== undefined && { noSleep: input.noSleep }),
    ...(input.status !== undefined && { status: input.status }),
    ...(input.config !== undefined && { config: JSON.stringify(input.config) }),
  });

  return {
    list(filter, page, size) {
      const condition = where(filter);
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
    all: () => db.select().from(providerKeys).where(mine).orderBy(providerKeys.id).all(),
    get: (id) => db.select().from(providerKeys).where(byId(id)).get(),
    create(input) {
      const now = deps.clock.now();
      return db
        .insert(providerKeys)
        .values({
          name: "",
          config: JSON.stringify({ provider_type: "standard" }),
          ...sealed(input),
          level: input.level,
          provider: input.provider,
          secretSealed: deps.sealer.seal(input.secret),
          partialKey: partialKey(input.secret),
          status: input.status,
          tenantId,
          createdAt: now,
          updatedAt: now,
        })
        .returning()
        .get();
    },
    update(id, input) {
      return db
        .update(providerKeys)
        .set({ ...sealed(input), updatedAt: deps.clock.now() })
        .where(byId(id))
        .returning()
        .get();
    },
    delete: (id) => db.delete(providerKeys).where(byId(id)).returning({ id: providerKeys.id }).all().length > 0,
    setSleep(id, state) {
      db.update(providerKeys)
        .set({ sleeping: state.sleeping, sleepReason: state.reason, sleepUntil: state.until, sleepCount: state.count })
        .where(byId(id))
        .run();
    },
    secretOf: (row) => deps.sealer.open(row.secretSealed),
  };
}
