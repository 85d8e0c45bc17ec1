import { keyHealth } from "../schema/key-health.ts";
import type { KeyHealthStore } from "../store.ts";
import { keyHealthUpsert, ofTenant } from "../key-health-upsert.ts";
import type { Connection } from "./connection.ts";
import type { Synchronous } from "./synchronous.ts";

const SET = keyHealthUpsert(keyHealth);

export function sqliteKeyHealth({ db }: Connection): Synchronous<KeyHealthStore> {
  return {
    add(rows) {
      if (rows.length === 0) return;
      // One row per key in a batch: 11 parameters each, far below SQLite's bound for any key count a tenant has.
      for (let i = 0; i < rows.length; i += 500) db.insert(keyHealth).values(rows.slice(i, i + 500)).onConflictDoUpdate({ target: keyHealth.keyId, set: SET }).run();
    },
    ofTenant: (tenantId) => db.select().from(keyHealth).where(ofTenant(keyHealth, tenantId)).all(),
  };
}
