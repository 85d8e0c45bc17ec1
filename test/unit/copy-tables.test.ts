import { describe, expect, test } from "bun:test";
import { getTableName, is } from "drizzle-orm";
import { PgTable } from "drizzle-orm/pg-core";
import { SQLiteTable } from "drizzle-orm/sqlite-core";
import { COPIED_TABLES } from "../../src/store/copy/tables.ts";
import * as pg from "../../src/store/postgres/schema/index.ts";
import * as lite from "../../src/store/schema/index.ts";

// `router migrate-data` copies the tables COPIED_TABLES lists: a table added to the
// schema and forgotten there would be left behind silently when a deployment moves.

const names = (tables: unknown[]) => tables.map((t) => getTableName(t as SQLiteTable)).sort();

describe("the tables migrate-data copies", () => {
  test("are every table of both schemas, each paired with its twin", () => {
    const copied = COPIED_TABLES.map((t) => t.name).sort();
    expect(names(Object.values(lite).filter((v) => is(v, SQLiteTable)))).toEqual(copied);
    expect(names(Object.values(pg).filter((v) => is(v, PgTable)))).toEqual(copied);
    for (const table of COPIED_TABLES) {
      expect(getTableName(table.sqlite)).toBe(table.name);
      expect(getTableName(table.postgres)).toBe(table.name);
    }
  });
});
