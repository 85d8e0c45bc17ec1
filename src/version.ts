import pkg from "../package.json" with { type: "json" };

/** The release version, embedded at build time from package.json. */
export const VERSION: string = pkg.version;

/**
 * The generation of what instances share in Redis (key layouts and meanings, script
 * contracts, usage rows, bus messages) and of the database schema they rely on. Instances
 * of two versions run side by side (a rolling upgrade) only with the same generation: a
 * release bumps it when an instance of the previous release would misread or damage what
 * it writes (a Redis value or row in a new form under an old name, a migration that does
 * more than add: test/unit/review-rolling-migrations.test.ts), or would count limits or
 * credit apart from it (a layout moved to a new key name). An instance refuses to start beside live instances of another
 * generation (state/redis/versions.ts); README "Upgrading instances".
 */
export const SHARED_GENERATION = 1;
