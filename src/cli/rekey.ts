/**
 * `router rekey --new-secret-key-file FILE`: re-seals every value sealed with the
 * deployment's key (provider secrets and their partial keys, secret settings such as
 * EMAIL_PASS, the answers kept for Idempotency-Key retries) with a new key, in one
 * transaction, for an operator who suspects the key file leaked. README, "Rotating the
 * sealing key", gives the procedure for both deployment styles.
 */
import { defineCommand } from "citty";
import { existsSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { SECRET_ITEMS } from "../admin/config/secret-items.ts";
import { createSealer, loadOrCreateSecretKey, loadSecretKey } from "../store/crypto.ts";
import { databasePath, writingDataDir } from "../store/data-dir.ts";
import { migrateFile } from "../store/sqlite/connection.ts";
import { describeCounts, type RekeyCounts } from "../store/rekey/reseal.ts";
import { rekeyPostgres, rekeySqlite } from "../store/rekey/run.ts";
import { takeRekeyLock } from "../store/serving-lock.ts";
import { shownUrl } from "../store/postgres/url.ts";
import { dataArgs } from "./common-args.ts";
import { databaseUrl } from "./database-flag.ts";
import { flagOrEnv, rejectEmptyValues, rejectStrayArguments, rejectUnknownFlags, UsageError } from "./flags.ts";
import { runOrExit } from "./run.ts";

const rekeyArgs = {
  "new-secret-key-file": {
    type: "string",
    description: "The new key file: created with a fresh random key (mode 0600) when it does not exist (required)",
    valueHint: "file",
  },
  ...dataArgs,
  database: {
    type: "string",
    description: "Re-seal this PostgreSQL database instead of the SQLite file (env ROUTER_DATABASE, the way to pass a password)",
    valueHint: "postgres://…",
  },
} as const;

export const rekeyCommand = defineCommand({
  meta: { name: "rekey", description: "Re-seal every stored secret with a new sealing key, all or nothing" },
  args: rekeyArgs,
  run: ({ args, rawArgs }) =>
    runOrExit(async () => {
      rejectUnknownFlags(rawArgs, rekeyArgs);
      rejectEmptyValues(rawArgs, args, rekeyArgs);
      rejectStrayArguments(args);
      const newFile = args["new-secret-key-file"];
      if (!newFile) throw new UsageError("--new-secret-key-file FILE is required; see --help");
      if (args.data && args.database) throw new UsageError("give --data (SQLite) or --database (PostgreSQL), not both");
      const url = args.data ? undefined : databaseUrl(args.database, "database");
      const dataDir = flagOrEnv(args, "data") ?? "./data";
      const oldFile = resolve(flagOrEnv(args, "secret-key-file") ?? join(dataDir, "secret.key"));
      if (resolve(newFile) === oldFile) throw new UsageError("--new-secret-key-file must be another file than the key in use; see --help");
      const dbPath = databasePath(dataDir);
      if (url === undefined && !existsSync(dbPath)) throw new Error(`no database at ${resolve(dbPath)}; is --data right?`);
      if (!existsSync(oldFile)) throw new Error(`no secret key at ${oldFile}: give the key in use with --secret-key-file`);
      const oldKey = loadSecretKey(oldFile, "--secret-key-file");

      const created = !existsSync(newFile);
      const newKey = loadOrCreateSecretKey(newFile);
      try {
        if (Buffer.from(newKey).equals(Buffer.from(oldKey))) throw new Error(`${resolve(newFile)} holds the key in use: give a new file (it is created) or another key`);
        const from = createSealer(newKey, [oldKey]);
        const to = createSealer(newKey);
        const counts =
          url === undefined
            ? await rekeyLocal(dataDir, dbPath, (path) => rekeySqlite(path, from, to, SECRET_ITEMS))
            : await (async () => {
                // Migrated first, as serve does: a database a newer router migrated is refused (it may seal values this one does not know of).
                const { migrateDatabase } = await import("../store/postgres/index.ts");
                for (const name of await migrateDatabase(url)) process.stdout.write(`applied ${name}\n`);
                return rekeyPostgres(url, from, to, SECRET_ITEMS);
              })();
        report(counts, url, resolve(newFile), oldFile, created);
      } catch (error) {
        // A failed rekey leaves things as they were: a key it created would only raise the question which key is the one.
        if (created) rmSync(newFile, { force: true });
        throw error;
      }
    }),
});

/** Runs the SQLite rekey under the data directory's lock: never while a server runs on it. */
async function rekeyLocal(dataDir: string, dbPath: string, body: (path: string) => Promise<RekeyCounts>): Promise<RekeyCounts> {
  const lock = takeRekeyLock(dataDir);
  if (!lock) {
    throw new Error(`a router is running on ${resolve(dataDir)}: stop it, then run rekey again (a running server holds the old key only and could open nothing re-sealed)`);
  }
  try {
    // Migrated first, as serve does: a database a newer router migrated is refused (it may seal values this one does not know of).
    for (const name of await writingDataDir(dataDir, () => migrateFile(dbPath))) process.stdout.write(`applied ${name}\n`);
    return await writingDataDir(dataDir, () => body(dbPath));
  } finally {
    lock.release();
  }
}

function report(counts: RekeyCounts, url: string | undefined, newFile: string, oldFile: string, created: boolean): void {
  const out = (line: string) => process.stdout.write(`${line}\n`);
  out(`${created ? "created a new key in" : "using the new key in"} ${newFile} (mode 0600)`);
  out(`re-sealed ${url === undefined ? "the database" : `PostgreSQL at ${shownUrl(url)}`} in one transaction; every value opens with the new key:`);
  for (const line of describeCounts(counts)) out(`  ${line}`);
  if (url === undefined) {
    out(`next: start the router with --secret-key-file ${newFile} (or move it to ${oldFile}); the old key opens nothing in this database now.`);
  } else {
    out(`next: restart every instance with --secret-key-file ${newFile} and without --fallback-secret-key-file; the old key opens nothing in this database now.`);
  }
  out(`Backups made before now are sealed with the old key (${oldFile}): keep it with them, or destroy both; make a new backup with --with-secret-key and the new key.`);
}
