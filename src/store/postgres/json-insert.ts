import type { SQL } from "bun";
import { getTableColumns, getTableName } from "drizzle-orm";
import type { PgTable } from "drizzle-orm/pg-core";
import type { SqlValue } from "../row-values.ts";

const INTEGER_TYPES = new Set(["integer", "bigint", "smallint"]);

/** What PostgreSQL's text cannot hold: NUL, and UTF-16 halves without their pair. */
const UNSTORABLE = /[\u0000\ud800-\udfff]/;

/**
 * A value PostgreSQL can store: NUL and lone surrogates (a client's model name, an
 * upstream's error text) become U+FFFD. One such character refused the whole batch, and
 * a batch of usage rows that cannot be written is retried until the backlog refuses
 * every call.
 */
export function storable<Value extends SqlValue | undefined>(value: Value): Value {
  return (typeof value === "string" && UNSTORABLE.test(value) ? value.toWellFormed().replaceAll("\u0000", "\ufffd") : value) as Value;
}

/** Rows per statement: bounds the one JSON text a statement carries (about 0.5 KB a row). */
const ROWS_PER_STATEMENT = 5000;

/**
 * The hot writes on PostgreSQL (usage rows, request-log rows): the rows go as one JSON
 * parameter that `json_to_recordset` expands, so the statement's text is the same for
 * every batch. The multi-row VALUES it replaces had a text per row count: PostgreSQL
 * parsed and planned a statement of up to thousands of parameters for nearly every batch
 * (batches vary with the traffic), and the client bound each value on its own. Measured on
 * batches of 40-160 rows: 3.8-7.4 µs a row on the client and 15-22 in PostgreSQL before,
 * 1.7-2.4 and 10-13 after. `append` gives a row's values in `columns`' order, defaults
 * applied; the types are the table's own. Resolves with what a `RETURNING` in `tail`
 * returned, as arrays of values (nothing without one).
 */
export function jsonInsert<Row>(table: PgTable, columns: readonly string[], append: (out: SqlValue[], row: Row) => SqlValue[], tail = "") {
  const types = new Map(Object.values(getTableColumns(table)).map((column) => [column.name, column.getSQLType()]));
  const definitions = columns.map((name) => {
    const type = types.get(name);
    if (!type) throw new Error(`${getTableName(table)} has no column ${name}`);
    // Numbers are read as numeric and cast by the INSERT as a bound parameter was: a
    // duration of 1.5 ms is rounded into an integer column, not refused.
    return `${name} ${INTEGER_TYPES.has(type) ? "numeric" : type}`;
  });
  const list = columns.join(", ");
  const text = `INSERT INTO ${getTableName(table)} (${list}) SELECT ${list} FROM json_to_recordset($1::text::json) AS r(${definitions.join(", ")})${tail}`;
  return async (client: SQL, rows: readonly Row[]): Promise<unknown[][]> => {
    const values: SqlValue[] = [];
    const returned: unknown[][] = [];
    for (let start = 0; start < rows.length; start += ROWS_PER_STATEMENT) {
      const records: Array<Record<string, SqlValue>> = [];
      for (let i = start; i < Math.min(rows.length, start + ROWS_PER_STATEMENT); i++) {
        values.length = 0;
        append(values, rows[i]!);
        const record: Record<string, SqlValue> = {};
        for (let c = 0; c < columns.length; c++) record[columns[c]!] = storable(values[c]!);
        records.push(record);
      }
      for (const row of (await client.unsafe(text, [JSON.stringify(records)]).values()) as unknown[][]) returned.push(row);
    }
    return returned;
  };
}
