/**
 * A provider key's health as the keys table shows it: the `Health` member of a key record
 * (`GET /x-keys?fields=overview|full`, `GET /x-keys/{id}`). An older server sends none:
 * the table then shows what it knows (enabled, asleep) and no figures.
 */
import type { ProviderKeyHealth } from "../../../src/wire/provider-keys.ts";

export type KeyHealth = ProviderKeyHealth;

export type HealthState = "disabled" | "asleep" | "failing" | "healthy" | "unused" | "unknown";

interface KeyState {
  Status: boolean;
  Sleeping: boolean;
  SleepReason?: string | null;
  Health?: KeyHealth | null;
}

/** The key's Health, when the server sent one. */
export const healthOf = (row: object): KeyHealth | undefined => (row as { Health?: KeyHealth | null }).Health ?? undefined;

/**
 * The badge, first rule that holds:
 * 1. Disabled: `Status` is false (no call is routed to it, whatever its figures).
 * 2. Asleep (reason): `Sleeping` (manual, auth, error, address…): out of rotation.
 * 3. Unknown: the server sent no `Health` (an older router).
 * 4. Failing: its latest outcome is an error (`LastError` later than `LastSuccessAt`, or
 *    an error and no success at all), or errors are half or more of today's requests.
 * 5. Unused: no call today and none on record (no success, no error).
 * 6. Healthy: otherwise (its latest call succeeded and most of today's did).
 */
export function healthState(row: KeyState): HealthState {
  if (!row.Status) return "disabled";
  if (row.Sleeping) return "asleep";
  const health = row.Health;
  if (!health) return "unknown";
  const lastError = health.LastError ? Date.parse(health.LastError.At) : null;
  const lastSuccess = health.LastSuccessAt ? Date.parse(health.LastSuccessAt) : null;
  if (lastError !== null && (lastSuccess === null || lastError > lastSuccess)) return "failing";
  if (health.Today.Requests > 0 && health.Today.Errors * 2 >= health.Today.Requests) return "failing";
  if (health.Today.Requests === 0 && lastError === null && lastSuccess === null) return "unused";
  return "healthy";
}

/** The badge's words and style. */
export function healthBadge(row: KeyState): { label: string; kind: "on" | "off" | "sleep" | "fail" } {
  const state = healthState(row);
  switch (state) {
    case "disabled":
      return { label: "Disabled", kind: "off" };
    case "asleep":
      return { label: `Asleep (${row.SleepReason ?? "unknown"})`, kind: "sleep" };
    case "failing":
      return { label: "Failing", kind: "fail" };
    case "healthy":
      return { label: "Healthy", kind: "on" };
    case "unused":
      return { label: "No calls yet", kind: "off" };
    case "unknown":
      return { label: "Enabled", kind: "on" };
  }
}
