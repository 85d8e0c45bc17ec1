import { describe, expect, test } from "bun:test";
import { cpSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { is, SQL, StringChunk } from "drizzle-orm";
import { getTableConfig as pgConfig, PgTable } from "drizzle-orm/pg-core";
import { getTableConfig as sqliteConfig, SQLiteTable } from "drizzle-orm/sqlite-core";
import * as postgresSchema from "../../src/store/postgres/schema/index.ts";
import * as sqliteSchema from "../../src/store/schema/index.ts";

/**
 * The schema is declared once per dialect (drizzle has no table builder both accept);
 * this test keeps the two declarations one schema: the same tables, columns (name,
 * JavaScript type, nullability, default, primary key) and indexes (name, columns,
 * uniqueness, condition). Column types differ only in width (int8 for times and money).
 */

/** The text of a partial index's condition. */
function conditionText(where: SQL | undefined): string | null {
  if (!where) return null;
  return where.queryChunks.map((chunk) => (is(chunk, StringChunk) ? chunk.value.join("") : "?")).join("");
}

type Shape = {
  columns: Array<{ name: string; type: string; notNull: boolean; default: unknown; primary: boolean }>;
  primaryKey: string[];
  indexes: Array<{ name: string; columns: string[]; unique: boolean; where: string | null }>;
};

function sqliteShapes(): Map<string, Shape> {
  const shapes = new Map<string, Shape>();
  for (const value of Object.values(sqliteSchema)) {
    if (!is(value, SQLiteTable)) continue;
    const config = sqliteConfig(value);
    shapes.set(config.name, {
      columns: config.columns.map((c) => ({ name: c.name, type: c.dataType, notNull: c.notNull, default: c.default, primary: c.primary })),
      primaryKey: config.primaryKeys.flatMap((pk) => pk.columns.map((c) => c.name)),
      indexes: config.indexes.map((i) => ({
        name: i.config.name,
        columns: i.config.columns.map((c) => (c as { name: string }).name),
        unique: i.config.unique,
        where: conditionText(i.config.where),
      })),
    });
  }
  return shapes;
}

function postgresShapes(): Map<string, Shape> {
  const shapes = new Map<string, Shape>();
  for (const value of Object.values(postgresSchema)) {
    if (!is(value, PgTable)) continue;
    const config = pgConfig(value);
    shapes.set(config.name, {
      columns: config.columns.map((c) => ({ name: c.name, type: c.dataType, notNull: c.notNull, default: c.default, primary: c.primary })),
      primaryKey: config.primaryKeys.flatMap((pk) => pk.columns.map((c) => c.name)),
      indexes: config.indexes.map((i) => ({
        name: i.config.name!,
        columns: i.config.columns.map((c) => (c as { name: string }).name),
        unique: i.config.unique,
        where: conditionText(i.config.where),
      })),
    });
  }
  return shapes;
}

describe("one schema, two dialects", () => {
  const sqlite = sqliteShapes();
  const postgres = postgresShapes();

  test("both declare the same tables", () => {
    expect([...postgres.keys()].sort()).toEqual([...sqlite.keys()].sort());
    expect(sqlite.size).toBeGreaterThan(5);
  });

  for (const [table, shape] of sqliteShapes()) {
    test(`${table}: the same columns, primary key and indexes`, () => {
      const twin = postgres.get(table);
      expect(twin).toBeDefined();
      expect(twin!.columns).toEqual(shape.columns);
      expect(twin!.primaryKey).toEqual(shape.primaryKey);
      const byName = <T extends { name: string }>(rows: T[]) => [...rows].sort((a, b) => a.name.localeCompare(b.name));
      expect(byName(twin!.indexes)).toEqual(byName(shape.indexes));
    });
  }
});

describe("the embedded migrations build each declaration", () => {
  const root = join(import.meta.dir, "..", "..");
  const DIALECTS = [
    { dialect: "sqlite", schema: "src/store/schema/index.ts", migrations: "src/store/migrations" },
    { dialect: "postgresql", schema: "src/store/postgres/schema/index.ts", migrations: "src/store/postgres/migrations" },
  ];
  for (const { dialect, schema, migrations } of DIALECTS) {
    test(`${dialect}: drizzle-kit finds nothing left to generate (run \`npm run migrations\` after a schema change)`, () => {
      const dir = mkdtempSync(join(tmpdir(), "migrations-check-"));
      try {
        cpSync(join(root, migrations), dir, { recursive: true });
        const before = readdirSync(dir).sort();
        // drizzle-kit takes --out relative to the working directory.
        const generate = Bun.spawnSync(
          [join(root, "node_modules", ".bin", "drizzle-kit"), "generate", "--dialect", dialect, "--schema", schema, "--out", relative(root, dir)],
          { cwd: root, stdout: "pipe", stderr: "pipe" },
        );
        expect(generate.exitCode).toBe(0);
        expect(generate.stdout.toString()).toContain("No schema changes");
        expect(readdirSync(dir).sort()).toEqual(before);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
