import type { Clock } from "../../core/clock.ts";
import type { Sealer } from "../../store/crypto.ts";
import { sealedElsewhereMessage } from "../../store/sealing-check.ts";
import type { ProviderKeyFilter, ProviderKeyRow, ProviderKeyValues, Store } from "../../store/store.ts";
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

export type { ProviderKeyFilter };

export interface SleepState {
  sleeping: boolean;
  reason: SleepReason | null;
  until: number | null;
  count: number;
}

/**
 * The display form of a secret: an ellipsis and its last 20 characters (spec 2.1). With
 * the spec's 20-character minimum that is most or all of a short secret, so it is stored
 * sealed like the secret itself and opened only to be shown to the owner.
 */
export function partialKey(secret: string): string {
  return `…${secret.slice(-20)}`;
}

/** A stored partial key as shown: opened, or as it is when written in clear before sealing. */
function openPartialKey(stored: string, sealer: Sealer): string {
  return sealer.isSealed(stored) ? sealer.open(stored) : stored;
}

/**
 * Seals the partial keys that routers before this one stored in clear, every tenant's,
 * at start (before any request is served). Without it a database would keep those tails
 * in clear until each key's secret is rotated. Each row is replaced only if it still
 * holds what was read, so a rotation or another instance doing the same meanwhile is
 * kept; clear values read later (a row a router of an older version wrote on a shared
 * database) are still shown as they are, and sealed at the next start. Returns how many
 * were sealed.
 */
export async function sealClearPartialKeys(store: Pick<Store, "providerKeys">, sealer: Sealer): Promise<number> {
  let sealed = 0;
  for (const { id, partialKey: stored } of await store.providerKeys.storedPartialKeys()) {
    if (sealer.isSealed(stored)) continue;
    if (await store.providerKeys.replacePartialKey(id, stored, sealer.seal(stored))) sealed++;
  }
  return sealed;
}

export interface ProviderKeysRepository {
  list(filter: ProviderKeyFilter, page: number, size: number): Promise<{ rows: ProviderKeyRow[]; total: number }>;
  all(): Promise<ProviderKeyRow[]>;
  get(id: number): Promise<ProviderKeyRow | undefined>;
  create(input: Required<Pick<ProviderKeyInput, "level" | "provider" | "secret" | "status">> & ProviderKeyInput): Promise<ProviderKeyRow>;
  update(id: number, input: ProviderKeyInput): Promise<ProviderKeyRow | undefined>;
  delete(id: number): Promise<boolean>;
  setSleep(id: number, state: SleepState): Promise<void>;
  /** The key's secret, unsealed (for the pool, never for an answer). */
  secretOf(row: ProviderKeyRow): string;
  /** The key's PartialKey (spec 2.1), unsealed for the records the owner reads. */
  partialKeyOf(row: ProviderKeyRow): string;
}

/** One tenant's provider keys, their secrets sealed on the way in. */
export function createProviderKeysRepository(deps: { store: Store; sealer: Sealer; clock: Clock; tenantId?: number }): ProviderKeysRepository {
  const keys = deps.store.providerKeys;
  const tenantId = deps.tenantId ?? 0;
  const sealedSecret = (secret: string) => ({ secretSealed: deps.sealer.seal(secret), partialKey: deps.sealer.seal(partialKey(secret)) });
  const sealed = (input: ProviderKeyInput): ProviderKeyValues => ({
    ...(input.name !== undefined && { name: input.name }),
    ...(input.level !== undefined && { level: input.level }),
    ...(input.provider !== undefined && { provider: input.provider }),
    ...(input.secret !== undefined && sealedSecret(input.secret)),
    ...(input.noSleep !== undefined && { noSleep: input.noSleep }),
    ...(input.status !== undefined && { status: input.status }),
    ...(input.config !== undefined && { config: JSON.stringify(input.config) }),
  });

  return {
    list: (filter, page, size) => keys.list(tenantId, filter, page, size),
    all: () => keys.all(tenantId),
    get: (id) => keys.get(tenantId, id),
    create: (input) =>
      keys.create(
        tenantId,
        {
          ...sealed({ ...input, secret: undefined }),
          ...sealedSecret(input.secret),
          level: input.level,
          provider: input.provider,
          status: input.status,
        },
        deps.clock.now(),
      ),
    update: (id, input) => keys.update(tenantId, id, sealed(input), deps.clock.now()),
    delete: (id) => keys.delete(tenantId, id),
    setSleep: (id, state) => keys.setSleep(tenantId, id, { sleeping: state.sleeping, sleepReason: state.reason, sleepUntil: state.until, sleepCount: state.count }),
    secretOf: (row) => {
      try {
        return deps.sealer.open(row.secretSealed);
      } catch {
        // The cipher's own words ("unable to authenticate data") say nothing of which key, or what to do.
        throw new Error(sealedElsewhereMessage(`provider key ${row.id}`));
      }
    },
    partialKeyOf: (row) => openPartialKey(row.partialKey, deps.sealer),
  };
}
