import type { KeyHealthStore } from "../store.ts";
import { keyHealthUpsert, ofTenant } from "../key-health-upsert.ts";
import type { Scope } from "./db.ts";
import { storable } from "./json-insert.ts";
import { keyHealth } from "./schema/key-health.ts";

const SET = keyHealthUpsert(keyHealth);

export function postgresKeyHealth({ db }: Scope): KeyHealthStore {
  return {
    async add(rows) {
      // One row per key in a batch (PostgreSQL refuses to update a row twice in one statement).
      // An upstream's error text may hold what PostgreSQL's text cannot (json-insert.ts, `storable`).
      const stored = rows.map((row) => (row.lastErrorMessage ? { ...row, lastErrorMessage: storable(row.lastErrorMessage) } : row));
      for (let i = 0; i < stored.length; i += 500) await db.insert(keyHealth).values(stored.slice(i, i + 500)).onConflictDoUpdate({ target: keyHealth.keyId, set: SET });
    },
    ofTenant: (tenantId) => db.select().from(keyHealth).where(ofTenant(keyHealth, tenantId)),
  };
}
