import { bestMatch, compilePattern, type CompiledPattern } from "../../routing/patterns.ts";
import catalogJson from "./catalog.json" with { type: "json" };
import { FACTOR_MEMBERS, SECTIONS, TOKEN_LIMIT_MEMBERS, type PricingTable, type Section } from "./schema.ts";

/** Context windows and output limits are token counts, FastMultiplier a factor: Rates does not scale them. */
const UNSCALED: readonly string[] = [...TOKEN_LIMIT_MEMBERS, ...FACTOR_MEMBERS];
const isTokenLimit = (member: string) => UNSCALED.includes(member);

/** The built-in catalog, embedded in the binary. */
export const CATALOG = catalogJson as PricingTable;

interface Entry<T> {
  pattern: CompiledPattern;
  price: T;
}

/** Prices in effect: the catalog with PRICING deltas merged in, compiled for lookup. */
export interface PriceBook {
  /** The merged table, as `GET /x-pricing` shows it. */
  readonly table: PricingTable;
  /** The price entry of a section that applies to a model (exact name, else the most specific pattern). */
  lookup<S extends Section>(section: S, model: string): PricingTable[S][string] | undefined;
}

/**
 * Merges PRICING over the catalog member by member: an override entry sets only the
 * members it names, and adds the model when the catalog lacks it.
 */
export function createPriceBook(overrides: Partial<PricingTable> = {}): PriceBook {
  const table = {} as PricingTable;
  const compiled = {} as Record<Section, Entry<unknown>[]>;
  for (const section of SECTIONS) {
    // No prototype: a model named "toString", "constructor" or "__proto__" is just a name.
    const merged: Record<string, Record<string, unknown>> = Object.create(null);
    for (const [model, price] of Object.entries(CATALOG[section] ?? {})) merged[model] = { ...price };
    for (const [model, price] of Object.entries(overrides[section] ?? {})) {
      const base = merged[model] ?? {};
      const next: Record<string, unknown> = { ...base, ...price };
      if ("Sizes" in price && "Sizes" in base) next.Sizes = { ...(base.Sizes as object), ...(price as { Sizes: object }).Sizes };
      merged[model] = next;
    }
    (table as unknown as Record<string, unknown>)[section] = merged;
    compiled[section] = Object.entries(merged).map(([model, price]) => ({ pattern: compilePattern(model), price }));
  }
  // Model names repeat call after call: remember each answer (the book is rebuilt on every PRICING change).
  const memo = new Map<string, unknown>();
  return {
    table,
    lookup(section, model) {
      const key = `${section}\u0000${model}`;
      if (memo.has(key)) return memo.get(key) as PricingTable[typeof section][string] | undefined;
      const price = bestMatch(compiled[section], model)?.price;
      if (memo.size < 10_000) memo.set(key, price);
      return price as PricingTable[typeof section][string] | undefined;
    },
  };
}

/** Every price of a table multiplied by an account's Rates (`GET /x-pricing` with a key). */
export function scaleTable(table: PricingTable, rates: number): PricingTable {
  const scale = (value: unknown): unknown =>
    typeof value === "number" ? Math.round(value * rates * 1e9) / 1e9 : value !== null && typeof value === "object"
      ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, isTokenLimit(k) ? v : scale(v)]))
      : value;
  return scale(table) as PricingTable;
}
