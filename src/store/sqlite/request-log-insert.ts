import type { Database } from "bun:sqlite";
import type { NewRequestLogRow } from "../store.ts";
import { appendRequestLogValues, multiRowInsert, REQUEST_LOG_COLUMNS, type SqlValue } from "../row-values.ts";

/** Rows per prepared INSERT (25 parameters each, far below SQLite's bound). */
const ROWS_PER_STATEMENT = 32;
const WIDTH = REQUEST_LOG_COLUMNS.length;

/** Rows as one flat array of their values in column order: what crosses to the upkeep thread (no keys, no object per row). */
export function requestLogValues(rows: readonly NewRequestLogRow[]): SqlValue[] {
  const values: SqlValue[] = [];
  for (const row of rows) appendRequestLogValues(values, row);
  return values;
}

/**
 * Inserts request-log rows given as one flat array of values (`requestLogValues`) into
 * `request_log` on a connection, by statements prepared once (the query builder made
 * and parsed a new statement per batch: 59 µs a call in the profile). Used by the
 * serving thread's repository and by the upkeep thread's writer, which loads no query builder.
 */
export function requestLogValuesInserter(sqlite: Database): (values: readonly SqlValue[]) => void {
  const insert = (count: number) =>
    sqlite.prepare<unknown, SqlValue[]>(multiRowInsert("request_log", REQUEST_LOG_COLUMNS, count, "?", " ON CONFLICT DO NOTHING"));
  const insertOne = insert(1);
  const insertGroup = insert(ROWS_PER_STATEMENT);
  const group = ROWS_PER_STATEMENT * WIDTH;
  return (values) => {
    let i = 0;
    for (; i + group <= values.length; i += group) insertGroup.run(...values.slice(i, i + group));
    for (; i + WIDTH <= values.length; i += WIDTH) insertOne.run(...values.slice(i, i + WIDTH));
  };
}
