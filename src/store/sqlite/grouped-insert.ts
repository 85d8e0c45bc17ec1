import type { Database } from "bun:sqlite";
import { multiRowInsert, REQUEST_LOG_COLUMNS, type SqlValue } from "../row-values.ts";

/** Rows per prepared INSERT (a few dozen parameters a row stays far below SQLite's bound). */
const ROWS_PER_STATEMENT = 32;

/**
 * Inserts rows given as one flat array of their values in column order (`flatValues`)
 * into `table` (resolving with how many it inserted), by two statements prepared once: one of 32 rows, one of one (the query
 * builder made and parsed a new statement per batch: 59 µs a call in the profile). The
 * hot writes' path on SQLite: usage rows, and request-log rows on either thread (the
 * upkeep thread's writer loads no query builder).
 */
export function groupedInsert(sqlite: Database, table: string, columns: readonly string[], tail = ""): (values: readonly SqlValue[]) => number {
  const run = grouped(sqlite, table, columns, tail);
  return (values) => {
    let changes = 0;
    run(values, (statement, slice) => {
      changes += statement.run(...slice).changes;
    });
    return changes;
  };
}

type Statement = ReturnType<Database["prepare"]>;

/** Runs the two prepared statements over `values`: groups of 32 rows, then one row at a time. */
function grouped(sqlite: Database, table: string, columns: readonly string[], tail: string) {
  const insert = (count: number) => sqlite.prepare<unknown, SqlValue[]>(multiRowInsert(table, columns, count, "?", tail));
  const insertOne = insert(1);
  const insertGroup = insert(ROWS_PER_STATEMENT);
  const width = columns.length;
  const group = ROWS_PER_STATEMENT * width;
  return (values: readonly SqlValue[], each: (statement: Statement, slice: SqlValue[]) => void) => {
    let i = 0;
    for (; i + group <= values.length; i += group) each(insertGroup, values.slice(i, i + group));
    for (; i + width <= values.length; i += width) each(insertOne, values.slice(i, i + width));
  };
}

/** The request log's grouped INSERT (a row already there is kept): the serving thread's repository and the upkeep thread's writer. */
export const requestLogInsert = (sqlite: Database) => groupedInsert(sqlite, "request_log", REQUEST_LOG_COLUMNS, " ON CONFLICT DO NOTHING");
