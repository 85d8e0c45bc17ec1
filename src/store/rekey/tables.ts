import type { Kind, createResealer } from "./reseal.ts";

/** One statement's access to the database inside the rekey's transaction. */
export interface RekeyTx {
  /** `?` placeholders; the PostgreSQL runner numbers them. */
  rows(sql: string, params: readonly unknown[]): Promise<Array<Record<string, unknown>>>;
  run(sql: string, params: readonly unknown[]): Promise<void>;
  /** What locks the rows read for the transaction's end (PostgreSQL: ` FOR UPDATE`; SQLite's write lock covers the file). */
  readonly lockRows: string;
}

interface SealedTable {
  table: string;
  /** The row's key columns, and how the row is named in an error. */
  key: readonly string[];
  name(row: Record<string, unknown>): string;
  columns: ReadonlyArray<{ column: string; kind: Kind }>;
  /** Only these rows hold sealed values (settings: the secret items). */
  where?: (secretItems: readonly string[]) => { sql: string; params: readonly unknown[] };
}

/**
 * Every value sealed with the deployment's key (src/store/crypto.ts), where it is stored:
 * a new use of the Sealer that stores what it seals belongs here too, or a rotation
 * leaves it sealed with the old key.
 */
const SEALED: readonly SealedTable[] = [
  {
    table: "provider_keys",
    key: ["id"],
    name: (row) => `provider key ${row.id}`,
    columns: [
      { column: "secret_sealed", kind: "provider secret" },
      { column: "partial_key", kind: "partial key" },
    ],
  },
  {
    table: "settings",
    key: ["tenant_id", "key"],
    name: (row) => `setting ${row.key} of tenant ${row.tenant_id}`,
    columns: [{ column: "value", kind: "setting" }],
    where: (items) => ({ sql: `key IN (${items.map(() => "?").join(", ")})`, params: items }),
  },
  {
    table: "idempotency_keys",
    key: ["account_id", "key"],
    name: (row) => `the Idempotency-Key row of account ${row.account_id}`,
    columns: [
      { column: "body", kind: "idempotency answer" },
      { column: "fingerprint", kind: "idempotency fingerprint" },
    ],
  },
];

/**
 * Re-seals every sealed value inside the caller's transaction, row by row, then reads
 * them all again and checks each opens with the new key alone. Any error leaves the
 * transaction to be rolled back by the caller: nothing is half re-sealed.
 */
export async function resealAll(tx: RekeyTx, resealer: ReturnType<typeof createResealer>, secretItems: readonly string[]): Promise<void> {
  for (const spec of SEALED) {
    const filter = spec.where?.(secretItems);
    if (filter && filter.params.length === 0) continue;
    const columns = [...spec.key, ...spec.columns.map((c) => c.column)].join(", ");
    const select = `SELECT ${columns} FROM ${spec.table}${filter ? ` WHERE ${filter.sql}` : ""} ORDER BY ${spec.key.join(", ")}`;
    for (const row of await tx.rows(select + tx.lockRows, filter?.params ?? [])) {
      const changes: Array<[string, string]> = [];
      for (const { column, kind } of spec.columns) {
        const next = resealer.reseal(kind, spec.name(row), row[column] as string | null);
        if (next !== undefined) changes.push([column, next]);
      }
      if (changes.length === 0) continue;
      const set = changes.map(([column]) => `${column} = ?`).join(", ");
      const where = spec.key.map((k) => `${k} = ?`).join(" AND ");
      await tx.run(`UPDATE ${spec.table} SET ${set} WHERE ${where}`, [...changes.map(([, value]) => value), ...spec.key.map((k) => row[k])]);
    }
    for (const row of await tx.rows(select, filter?.params ?? [])) {
      for (const { column, kind } of spec.columns) resealer.verify(kind, spec.name(row), row[column] as string | null);
    }
  }
}
