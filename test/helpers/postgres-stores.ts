import { openPostgresStore } from "../../src/store/postgres/index.ts";
import type { Store } from "../../src/store/store.ts";
import { startPostgres, type PostgresServer } from "./postgres-server.ts";

/**
 * Stores on a throwaway PostgreSQL for one test file, started on first use: each
 * `fresh()` is a store on a database of its own. The file closes them with
 * `afterAll(stores.close)`.
 */
export function postgresStores() {
  let postgres: PostgresServer | undefined;
  const opened: Store[] = [];
  return {
    async fresh(): Promise<Store> {
      postgres ??= await startPostgres();
      const store = await openPostgresStore(postgres.url(await postgres.createDatabase()));
      opened.push(store);
      return store;
    },
    async close(): Promise<void> {
      for (const store of opened.splice(0)) store.close();
      await postgres?.stop();
      postgres = undefined;
    },
  };
}
