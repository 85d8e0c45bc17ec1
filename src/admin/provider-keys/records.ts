/**
 * Provider Keys as the management endpoints show them (spec 2.1). Field names are
 * those of the creation body, so a full record read back can be sent again as an
 * update. The summary form carries only the masked secret; the full form is what
 * the owner needs to audit or copy a key, so it includes the opened secret; the edit
 * form is the full one without it, for a form that shows a key's settings.
 */
import type { ProviderConfig } from "../../routing/provider-config.ts";
import { formatsOf } from "../../routing/key-formats.ts";
import type { SleepReason } from "../../routing/pool-key.ts";
import type { ProviderKeyRow } from "../../store/store.ts";
import type { ProviderKeyEdit, ProviderKeyHealth, ProviderKeyOverview, ProviderKeyRecord, ProviderKeySummary } from "../../wire/provider-keys.ts";

const iso = (ms: number) => new Date(ms).toISOString();

/** `partialKey` is passed in opened (repository.partialKeyOf): it is stored sealed. */
export function summaryRecord(row: ProviderKeyRow, partialKey: string): ProviderKeySummary {
  return {
    ID: row.id,
    Name: row.name,
    Level: row.level,
    Provider: row.provider,
    PartialKey: partialKey,
    NoSleep: row.noSleep,
    Status: row.status,
    Sleeping: row.sleeping,
    CreatedAt: iso(row.createdAt),
  };
}

/**
 * What the full record adds to the summary besides the secret. `config.formats` is shown
 * filled with its default when the key has none, so the owner sees what routing assumes
 * the key speaks.
 */
function settingsOf(row: ProviderKeyRow, health: ProviderKeyHealth): Omit<ProviderKeyEdit, keyof ProviderKeySummary> {
  const config = JSON.parse(row.config) as ProviderConfig;
  return {
    config: { ...config, formats: formatsOf(row.provider, config) },
    SleepReason: (row.sleepReason as SleepReason | null) ?? null,
    SleepUntil: row.sleepUntil === null ? null : iso(row.sleepUntil),
    UpdatedAt: iso(row.updatedAt),
    Health: health,
  };
}

/** `secret` is passed in opened (repository.secretOf) so this module never sees the sealer. */
export function fullRecord(row: ProviderKeyRow, partialKey: string, secret: string, health: ProviderKeyHealth): ProviderKeyRecord {
  return { ...summaryRecord(row, partialKey), SecretKey: secret, ...settingsOf(row, health) };
}

/**
 * `fields=edit`: the full record without `SecretKey`, what an edit form reads. The form
 * shows a key's settings and its PartialKey and takes a new secret only to rotate it, so
 * the opened secret has no business travelling to a browser for it.
 */
export function editRecord(row: ProviderKeyRow, partialKey: string, health: ProviderKeyHealth): ProviderKeyEdit {
  return { ...summaryRecord(row, partialKey), ...settingsOf(row, health) };
}

/** The service account a Vertex key file names (an identity, shown instead of a tail of the file). */
export function clientEmailOf(secret: string): string | null {
  try {
    const email = (JSON.parse(secret) as { client_email?: unknown }).client_email;
    return typeof email === "string" ? email : null;
  } catch {
    return null;
  }
}

/** `fields=overview`: the summary plus what a list shows, never the secret itself. */
export function overviewRecord(row: ProviderKeyRow, partialKey: string, secret: () => string, health: ProviderKeyHealth): ProviderKeyOverview {
  const config = JSON.parse(row.config) as ProviderConfig;
  const type = config.provider_type ?? "standard";
  return {
    ...summaryRecord(row, partialKey),
    ProviderType: type,
    ClientEmail: type === "vertex" ? clientEmailOf(secret()) : null,
    SleepReason: (row.sleepReason as SleepReason | null) ?? null,
    SleepUntil: row.sleepUntil === null ? null : iso(row.sleepUntil),
    Health: health,
  };
}
