import { api } from "../lib/api.ts";
import type { ConfigExport } from "../lib/types.ts";
import { mapperEntries, mapperText } from "../../../src/wire/mapper-text.ts";

export type Configs = ConfigExport["configs"];

export async function loadConfig(): Promise<Configs> {
  return (await api.get<ConfigExport>("/x-config")).data.configs;
}

export async function putConfig(values: Configs): Promise<Configs> {
  return (await api.put<ConfigExport>("/x-config", values)).data.configs;
}

/** Removes items (back to their defaults); without names, PRICING. */
export async function resetConfig(keys?: string[]): Promise<Configs> {
  return (await api.del<{ configs: Configs }>("/x-config", keys ? { keys } : undefined)).data.configs;
}

/**
 * Adds `<pattern>=<level>` to LEVEL_MAPPER, keeping the other entries and their order
 * (an existing entry for the same pattern is replaced in place). Returns the Level the
 * pattern had before, if any.
 */
export async function addLevelMapping(pattern: string, level: number): Promise<string | undefined> {
  const entries = mapperEntries((await loadConfig()).LEVEL_MAPPER);
  const existing = entries.find((e) => e.left === pattern);
  const before = existing?.right;
  if (existing) existing.right = String(level);
  else entries.push({ left: pattern, right: String(level) });
  await putConfig({ LEVEL_MAPPER: mapperText(entries) });
  return before;
}
