import { expect } from "bun:test";

/**
 * A database from before emails and names were unique per tree: two owners' trees (1 and
 * 4, one three levels deep) and a deleted account of tree 4 that once used the email and
 * name tree 1's child uses now. The statements that seed it, in SQL both dialects take,
 * and what the migration must leave. Shared by the SQLite and PostgreSQL migration tests.
 */
const columns = "(id, parent_id, path, depth, is_owner, email, name, key_hash, key_prefix, created_at, updated_at, deleted_at)";
const row = (id: number, parentId: number | null, path: string, email: string, name: string, deletedAt: number | null = null) =>
  `(${id}, ${parentId ?? "NULL"}, '${path}', ${path.split("/").length - 2}, ${parentId === null}, '${email}', '${name}', 'hash-${id}', 'sk-${id}', 1, 1, ${deletedAt ?? "NULL"})`;

export const ACCOUNT_TREES_SEED = [
  `INSERT INTO accounts ${columns} VALUES ${[
    row(1, null, "/1/", "owner@a.example", "owner-a"),
    row(2, 1, "/1/2/", "kid@a.example", "kid-a"),
    row(3, 2, "/1/2/3/", "grand@a.example", "grand-a"),
    row(4, null, "/4/", "owner@b.example", "owner-b"),
    row(5, 4, "/4/5/", "kid@a.example", "kid-a", 2),
    row(6, 4, "/4/6/", "kid@b.example", "kid-b"),
  ].join(", ")}`,
];

type Query = (text: string) => Promise<Array<Record<string, unknown>>>;

const insertInto = (id: number, root: number, email: string, name: string, owner = false) =>
  `INSERT INTO accounts (id, parent_id, path, root_id, depth, is_owner, email, name, key_hash, key_prefix, created_at, updated_at) VALUES (${id}, ${owner ? "NULL" : root}, '/${root}/${owner ? "" : `${id}/`}', ${root}, ${owner ? 1 : 2}, ${owner}, '${email}', '${name}', 'hash-${id}', 'sk-${id}', 1, 1)`;

/** Every row's root is the first segment of its path, and the new indexes hold per tree (owners' emails among owners). */
export async function expectTreesMigrated(query: Query): Promise<void> {
  const rows = await query("SELECT id, root_id FROM accounts ORDER BY id");
  expect(rows.map((r) => [Number(r.id), Number(r.root_id)])).toEqual([[1, 1], [2, 1], [3, 1], [4, 4], [5, 4], [6, 4]]);
  // Tree 4 may now use what tree 1 uses (emails and names, the owner's email too) ...
  await query(insertInto(20, 4, "kid@a.example", "kid-a"));
  await query(insertInto(21, 4, "owner@a.example", "owner-a"));
  // ... but not twice, and tree 1 not what it uses already; an owner's address owns one tree.
  await expect(query(insertInto(22, 4, "kid@a.example", "other-name"))).rejects.toThrow(/unique|UNIQUE/);
  await expect(query(insertInto(23, 1, "fresh@a.example", "grand-a"))).rejects.toThrow(/unique|UNIQUE/);
  await expect(query(insertInto(24, 24, "owner@b.example", "owner-c", true))).rejects.toThrow(/unique|UNIQUE/);
  await query(insertInto(25, 25, "kid@b.example", "owner-d", true));
}
