import { keyHealth } from "../schema/key-health.ts";
import type { KeyHealthStore } from "../store.ts";
import { ofTenant } from "../key-health-upsert.ts";
import type { Connection } from "./connection.ts";
import type { Synchronous } from "./synchronous.ts";
import { keyHealthAdder } from "./usage-statements.ts";

export function sqliteKeyHealth({ db, sqlite }: Connection): Synchronous<KeyHealthStore> {
  return {
    add: keyHealthAdder(sqlite),
    ofTenant: (tenantId) => db.select().from(keyHealth).where(ofTenant(keyHealth, tenantId)).all(),
  };
}
