/**
 * The root of an account's materialised path (`/7/12/` → 7): the owner whose tree the
 * account is in, an owner's being its own id. Emails and names are unique per root, and
 * every identifier is resolved inside the caller's own root (its subtree is part of it).
 * A path without a first segment (never stored) has root 0, which no account has.
 */
export function rootIdOf(path: string): number {
  const first = path.split("/")[1];
  return first ? Number(first) : 0;
}

/**
 * The root an account's row is inserted with, before the same statement group sets its
 * path: its parent's, or for an owner (whose root is its own id, known once the row
 * exists) 0, which no tree has. Writes take turns (one store transaction at a time), so
 * no two owners' rows wait at 0 together.
 */
export const rootBeforePath = (parentPath: string): number => (parentPath === "" ? 0 : rootIdOf(parentPath));
