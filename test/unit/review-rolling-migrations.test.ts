import { describe, expect, test } from "bun:test";
import { migrations } from "../../src/store/postgres/migrations/index.ts";
import { SHARED_GENERATION } from "../../src/version.ts";

/**
 * The rolling-upgrade rule for the schema (README "Upgrading instances"): a PostgreSQL
 * migration only adds, so instances of the previous version, still serving while the
 * next one migrated, keep reading and writing (drizzle names the columns it selects and
 * inserts; a new column has a default or takes NULL; a new constraint binds only what
 * the migration creates). A migration that does more breaks them: it is listed in
 * BREAKING with the shared-form generation (version.ts) it bumps to, so that instances
 * of the two versions refuse to run side by side.
 */

/** Migrations from before the rule: generation 1 covers them (0005 rewrites usage rows, 0010 adds a NOT NULL column and replaces indexes). */
const BASELINE = "0011_operation_log_pages";
/** Migrations after the baseline that do more than add, with the generation they introduced. */
const BREAKING: Record<string, number> = {};

/** What a migration does beyond adding: one line per statement that would break instances of the previous version. */
function beyondAdding(sql: string): string[] {
  const statements = sql
    .split("--> statement-breakpoint")
    .map((text) =>
      text
        .split("\n")
        .filter((line) => !line.trim().startsWith("--"))
        .join("\n")
        .trim()
        .replace(/\s+/g, " ")
        .replace(/;$/, ""),
    )
    .filter(Boolean);
  const created = new Set<string>();
  const problems: string[] = [];
  for (const statement of statements) {
    const table = /^CREATE TABLE (?:IF NOT EXISTS )?"?(\w+)"?/i.exec(statement);
    if (table) {
      created.add(table[1]!);
      continue;
    }
    const index = /^CREATE (UNIQUE )?INDEX (?:IF NOT EXISTS )?"?\w+"? ON "?(\w+)"?/i.exec(statement);
    if (index) {
      // A unique index on a table the previous version writes can refuse its inserts.
      if (index[1] && !created.has(index[2]!)) problems.push(`unique index on an existing table: ${statement}`);
      continue;
    }
    const column = /^ALTER TABLE "?(\w+)"? ADD COLUMN "?\w+"? (.*)$/i.exec(statement);
    if (column) {
      const definition = column[2]!.toUpperCase();
      // The previous version's inserts leave the column out: NOT NULL needs a default.
      if (definition.includes("NOT NULL") && !definition.includes("DEFAULT")) problems.push(`NOT NULL column without a default: ${statement}`);
      continue;
    }
    const constraint = /^ALTER TABLE "?(\w+)"? ADD CONSTRAINT/i.exec(statement);
    if (constraint && created.has(constraint[1]!)) continue;
    problems.push(statement.length > 120 ? `${statement.slice(0, 120)}…` : statement);
  }
  return problems;
}

describe("PostgreSQL migrations keep the previous version serving", () => {
  test("every migration after the baseline only adds, or is listed as breaking with a generation this router has reached", () => {
    const after = migrations.slice(migrations.findIndex((m) => m.name === BASELINE) + 1);
    expect(migrations.some((m) => m.name === BASELINE)).toBe(true);
    for (const migration of after) {
      const problems = beyondAdding(migration.sql);
      if (problems.length === 0) continue;
      // A breaking migration moves the generation on: instances of the two versions then refuse to run side by side.
      expect({ migration: migration.name, generation: BREAKING[migration.name], problems }).toEqual({ migration: migration.name, generation: expect.any(Number), problems });
      expect(BREAKING[migration.name]!).toBeGreaterThan(1);
      expect(BREAKING[migration.name]!).toBeLessThanOrEqual(SHARED_GENERATION);
    }
  });

  test("the check tells adding from more: it passes the additive migrations before the rule and names what 0005 and 0010 did", () => {
    const sql = (name: string) => migrations.find((m) => m.name === name)!.sql;
    for (const additive of ["0000_initial", "0002_request_log_error", "0003_key_health", "0006_usage_claim_writes", "0009_client_secret_minter", "0011_operation_log_pages"]) {
      expect({ additive, problems: beyondAdding(sql(additive)) }).toEqual({ additive, problems: [] });
    }
    const identities = beyondAdding(sql("0010_tenant_scoped_identities"));
    expect(identities.some((p) => p.startsWith("UPDATE"))).toBe(true);
    expect(identities.some((p) => p.includes("SET NOT NULL"))).toBe(true);
    expect(identities.some((p) => p.startsWith("DROP INDEX"))).toBe(true);
    expect(identities.some((p) => p.startsWith("unique index on an existing table"))).toBe(true);
    expect(beyondAdding(sql("0005_usage_row_identity")).some((p) => p.startsWith("DELETE FROM usage_events"))).toBe(true);
    expect(beyondAdding('ALTER TABLE "usage_events" ADD COLUMN "tier" text NOT NULL;')).toHaveLength(1);
    expect(beyondAdding('ALTER TABLE "usage_events" ADD COLUMN "tier" text DEFAULT \'x\' NOT NULL;')).toEqual([]);
  });
});
