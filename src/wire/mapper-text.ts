/**
 * The text form of the mapper items MODEL_MAPPER, LEVEL_MAPPER and SWITCH_OVER (spec 2.4):
 * `<left>=<right>` entries, comma-separated, in the order routing reads them. `GET /x-config`
 * exports them so, and the CLI and the console read and write them with these two
 * functions. No escape is needed: the router refuses a name holding "," or "=" in either
 * form `PUT /x-config` takes, so no stored entry can contain one.
 */

/** The items whose value is a list of `<left>=<right>` entries. */
export const MAPPER_ITEMS: readonly string[] = ["MODEL_MAPPER", "LEVEL_MAPPER", "SWITCH_OVER"];

/** One `<left>=<right>` entry of a mapper item, in the order written. */
export interface MapperEntry {
  left: string;
  right: string;
}

/**
 * The entries of an exported mapper value, in order; none for an unset item or `""`.
 * Written for the router's own export: an entry without `=` is skipped (the router
 * checks what it is sent; see admin/config/mappers.ts). An object, as routers before
 * this form exported, is read too, so the CLI still works against one.
 */
export function mapperEntries(value: unknown): MapperEntry[] {
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    return Object.entries(value as Record<string, unknown>).map(([left, right]) => ({ left, right: String(right) }));
  }
  if (typeof value !== "string") return [];
  const entries: MapperEntry[] = [];
  for (const raw of value.split(",")) {
    const at = raw.indexOf("=");
    if (at < 0) continue;
    entries.push({ left: raw.slice(0, at).trim(), right: raw.slice(at + 1).trim() });
  }
  return entries;
}

/** Entries as the text the router stores and exports: `a=b,c=d`. */
export function mapperText(entries: readonly MapperEntry[]): string {
  return entries.map((e) => `${e.left}=${e.right}`).join(",");
}
