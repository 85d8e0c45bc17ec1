/** The PostgreSQL store (issue 15): what the rest of the router may open or call. */
export { openPostgresStore, migrateDatabase, type PostgresOptions } from "./store.ts";
export { acquireSingleInstanceLock, type InstanceLock } from "./instance-lock.ts";
export { withStartupLock, sealedValues, pingDatabase } from "./startup.ts";
export { shownUrl, describeFailure } from "./url.ts";
