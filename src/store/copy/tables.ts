import type { AnyColumn } from "drizzle-orm";
import type { PgTable } from "drizzle-orm/pg-core";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import * as pg from "../postgres/schema/index.ts";
import * as lite from "../schema/index.ts";

/**
 * What `router migrate-data` copies: every table of a deployment, as twins of the two
 * schema declarations (test/unit/schema-dialects.test.ts holds them to one shape, so a
 * row read through one is a row the other accepts). The order is the one a reader
 * expects (accounts first); the database declares no foreign keys, so any order inserts.
 */
export interface CopiedTable {
  /** The table's name in both databases. */
  readonly name: string;
  readonly sqlite: SQLiteTable;
  readonly postgres: PgTable;
  /** The primary key's columns in the SQLite table: the source is read in pages by it. */
  readonly key: readonly AnyColumn[];
  /** The identity column whose sequence must move past the copied ids, if any. */
  readonly identity?: string;
}

export const COPIED_TABLES: readonly CopiedTable[] = [
  { name: "accounts", sqlite: lite.accounts, postgres: pg.accounts, key: [lite.accounts.id], identity: "id" },
  { name: "credit_grants", sqlite: lite.creditGrants, postgres: pg.creditGrants, key: [lite.creditGrants.id], identity: "id" },
  { name: "provider_keys", sqlite: lite.providerKeys, postgres: pg.providerKeys, key: [lite.providerKeys.id], identity: "id" },
  { name: "settings", sqlite: lite.settings, postgres: pg.settings, key: [lite.settings.tenantId, lite.settings.key] },
  { name: "usage_events", sqlite: lite.usageEvents, postgres: pg.usageEvents, key: [lite.usageEvents.id], identity: "id" },
  {
    name: "usage_daily",
    sqlite: lite.usageDaily,
    postgres: pg.usageDaily,
    key: [lite.usageDaily.accountId, lite.usageDaily.day, lite.usageDaily.model],
  },
  { name: "notices", sqlite: lite.notices, postgres: pg.notices, key: [lite.notices.id], identity: "id" },
  { name: "operation_log", sqlite: lite.operationLog, postgres: pg.operationLog, key: [lite.operationLog.id], identity: "id" },
  {
    name: "soft_limit_notices",
    sqlite: lite.softLimitNotices,
    postgres: pg.softLimitNotices,
    key: [lite.softLimitNotices.accountId, lite.softLimitNotices.month],
  },
  { name: "upstream_objects", sqlite: lite.upstreamObjects, postgres: pg.upstreamObjects, key: [lite.upstreamObjects.objectId] },
  { name: "request_log", sqlite: lite.requestLog, postgres: pg.requestLog, key: [lite.requestLog.requestId] },
  { name: "key_health", sqlite: lite.keyHealth, postgres: pg.keyHealth, key: [lite.keyHealth.keyId] },
  { name: "usage_claim_writes", sqlite: lite.usageClaimWrites, postgres: pg.usageClaimWrites, key: [lite.usageClaimWrites.claim] },
  {
    name: "usage_copies",
    sqlite: lite.usageCopies,
    postgres: pg.usageCopies,
    key: [lite.usageCopies.requestId, lite.usageCopies.createdAt, lite.usageCopies.endpoint, lite.usageCopies.status],
  },
  {
    name: "idempotency_keys",
    sqlite: lite.idempotencyKeys,
    postgres: pg.idempotencyKeys,
    key: [lite.idempotencyKeys.accountId, lite.idempotencyKeys.key],
  },
  // A count only the SQLite server reads; copied as every table is (PostgreSQL never reads it).
  { name: "watched_writes", sqlite: lite.watchedWrites, postgres: pg.watchedWrites, key: [lite.watchedWrites.id] },
];
