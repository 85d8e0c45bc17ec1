import type { SQL } from "bun";
import type { SqlValue } from "../row-values.ts";

/**
 * Inserts `rows` in statements of at most `perStatement` rows, each statement made once
 * per row count (`statement`) and bound with the rows' positional values (`append`):
 * the hot writes' path on PostgreSQL (usage rows, request-log rows), where drizzle's
 * query building was the top of the scale-out profile.
 */
export async function groupedInsert<Row>(
  client: SQL,
  rows: readonly Row[],
  perStatement: number,
  statement: (rows: number) => string,
  append: (out: SqlValue[], row: Row) => SqlValue[],
): Promise<void> {
  for (let i = 0; i < rows.length; i += perStatement) {
    const group = Math.min(perStatement, rows.length - i);
    const values: SqlValue[] = [];
    for (let j = i; j < i + group; j++) append(values, rows[j]!);
    await client.unsafe(statement(group), values);
  }
}
