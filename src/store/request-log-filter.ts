import { and, eq, gte, inArray, like, lte, or, sql, type AnyColumn, type SQL, type Table } from "drizzle-orm";
import type { RequestLogFilter } from "./store.ts";
import { pathsUnder } from "./key-ranges.ts";

/** The request-log columns a filter reads, from either dialect's table. */
export interface RequestLogColumns {
  tenantId: AnyColumn;
  accountId: AnyColumn;
  requestedModel: AnyColumn;
  effectiveModel: AnyColumn;
  status: AnyColumn;
  keyIds: AnyColumn;
  levels: AnyColumn;
  createdAt: AnyColumn;
  requestId: AnyColumn;
}


/**
 * A request-log filter as one condition: the same SQL in both dialects (the store of each
 * passes its own tables).
 *
 * `pathPattern` (PostgreSQL) selects a subtree's accounts with a LIKE, else a key range.
 *
 * `byAccount` (SQLite, a subtree's filter only) keeps the tenant and the time bounds off
 * the indexes (`+column`, which SQLite reads as "not an index term"), so the only index the
 * planner can take is the account one, driven by the subtree's account ids: the rows read
 * are the subtree's, however many the tenant has. The tenant term is otherwise the one
 * SQLite prefers, walking every row of the tenant, table row by table row, to find a small
 * subtree's few. It stays as a condition: rows of the other deployment style (tenant 0
 * under BYOK) stay unseen, as docs/api.md says.
 */
export function requestLogWhere(
  log: RequestLogColumns,
  accounts: Table & { id: AnyColumn; path: AnyColumn },
  filter: RequestLogFilter,
  options: { byAccount?: boolean; pathPattern?: boolean } = {},
): SQL {
  const byAccount = options.byAccount === true && filter.under !== undefined;
  const parts: SQL[] = [byAccount ? sql`+${log.tenantId} = ${filter.tenantId}` : eq(log.tenantId, filter.tenantId)];
  if (filter.accountId !== undefined) parts.push(eq(log.accountId, filter.accountId));
  if (filter.under !== undefined) {
    // PostgreSQL's path index has the pattern operator class: it serves a LIKE, not a range,
    // and only with it does the planner see how few accounts a small subtree has (with the
    // range it guessed dozens, and walked the time index through most of the log for them).
    const members = options.pathPattern === true ? like(accounts.path, `${filter.under}%`) : pathsUnder(accounts.path, filter.under);
    parts.push(inArray(log.accountId, sql`(SELECT ${accounts.id} FROM ${accounts} WHERE ${members})`));
  }
  if (filter.model !== undefined) parts.push(or(eq(log.requestedModel, filter.model), eq(log.effectiveModel, filter.model))!);
  if (filter.statusFrom !== undefined) parts.push(gte(log.status, filter.statusFrom));
  if (filter.statusTo !== undefined) parts.push(lte(log.status, filter.statusTo));
  if (filter.keyId !== undefined) parts.push(like(log.keyIds, `%,${filter.keyId},%`));
  if (filter.level !== undefined) parts.push(like(log.levels, `%,${filter.level},%`));
  if (filter.since !== undefined) parts.push(byAccount ? sql`+${log.createdAt} >= ${filter.since}` : gte(log.createdAt, filter.since));
  if (filter.until !== undefined) parts.push(byAccount ? sql`+${log.createdAt} <= ${filter.until}` : lte(log.createdAt, filter.until));
  if (filter.requestId !== undefined) parts.push(eq(log.requestId, filter.requestId));
  return and(...parts)!;
}
