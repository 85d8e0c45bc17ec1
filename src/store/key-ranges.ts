import { and, eq, gte, lt, lte, type AnyColumn, type SQL } from "drizzle-orm";

/**
 * Prefix conditions written as key ranges, so an index serves them. SQLite takes no
 * index for `LIKE 'prefix%'` (its LIKE is case-insensitive, the columns' collation is
 * not): a LIKE read every entry of the index, or of the table. PostgreSQL's path index
 * has the pattern operator class, which serves its LIKE and not a range: its accounts
 * keep the LIKE; the days' key has the default one, which serves the range only.
 */

/** Every path with the prefix `/1/4/` lies in [`/1/4/`, `/1/40`): paths are digits and slashes, so any collation agrees. */
export const pathUpperBound = (path: string) => `${path.slice(0, -1)}0`;

/** The accounts whose path starts with `path` (the account owning it included): one range of the path index. */
export function pathsUnder(column: AnyColumn, path: string): SQL {
  return and(gte(column, path), lt(column, pathUpperBound(path)))!;
}

/**
 * The rollups of a business period: a day (`YYYY-MM-DD`), or a month (`YYYY-MM`) as the
 * range of its days, so the (account, day, …) key reads the month's rows of each account
 * only. As a LIKE, a month's subtree total (seeded on a model call's admission, at the
 * month's first call) read every day of every account of the subtree since the
 * deployment began. Days are zero-padded digits and dashes: every collation orders them alike.
 */
export function periodDays(day: AnyColumn, period: string): SQL {
  return period.length === 7 ? and(gte(day, `${period}-01`), lte(day, `${period}-31`))! : eq(day, period);
}
