import { defineCommand } from "citty";
import { existsSync } from "node:fs";
import { createOwners } from "../accounts/owners.ts";
import { createClock } from "../core/clock.ts";
import { HttpError } from "../core/errors.ts";
import { databasePath, prepareDataDir, writingDataDir } from "../store/data-dir.ts";
import { openStore } from "../store/open.ts";
import type { Store } from "../store/store.ts";
import { databaseUrl } from "./database-flag.ts";
import { flagOrEnv, rejectEmptyValues, rejectStrayArguments, rejectUnknownFlags, requireSubCommand, UsageError } from "./flags.ts";
import { runOrExit } from "./run.ts";

const createArgs = {
  email: { type: "string", description: "Email of the new owner (required)", valueHint: "email" },
  name: { type: "string", description: "Account name, 4-63 characters with a letter (default: from the email)" },
  data: { type: "string", description: "Data directory of a SQLite deployment (env ROUTER_DATA; default ./data)", valueHint: "dir" },
  database: {
    type: "string",
    description: "Create it in this PostgreSQL database instead (env ROUTER_DATABASE, the way to pass a password)",
    valueHint: "postgres://…",
  },
} as const;

const createCommand = defineCommand({
  meta: {
    name: "create",
    description: "Create another owner account and print its API key (the only line on stdout)",
  },
  args: createArgs,
  run: ({ args, rawArgs }) =>
    runOrExit(async () => {
      rejectUnknownFlags(rawArgs, createArgs);
      rejectEmptyValues(rawArgs, args, createArgs);
      rejectStrayArguments(args);
      if (!args.email) throw new UsageError("--email is required");
      if (args.data && args.database) throw new UsageError("give --data (SQLite) or --database (PostgreSQL), not both");
      // As for migrate: --data on the command line wins over ROUTER_DATABASE in the environment.
      const url = args.data ? undefined : databaseUrl(args.database, "database");
      // SQLite's data directory: a full or read-only disk there is named with it.
      const dataDir = url === undefined ? (flagOrEnv(args, "data") ?? "./data") : undefined;
      let store: Store;
      if (dataDir === undefined) {
        // Loaded here: the SQLite path never needs the PostgreSQL store.
        const { openPostgresStore } = await import("../store/postgres/index.ts");
        store = await openPostgresStore(url!);
      } else {
        // A typo in --data, or the wrong directory, must not start a new deployment whose key works nowhere.
        const path = databasePath(dataDir);
        if (!existsSync(path)) throw new Error(`no database at ${path}; is --data right? (router serve creates it on first start)`);
        const notice = prepareDataDir(dataDir);
        if (notice) process.stderr.write(`router: ${notice}\n`);
        // Safe while a server runs on the same data dir: WAL plus a busy timeout, and
        // the server looks unknown keys up in the database, so it accepts this key at once.
        store = await writingDataDir(dataDir, () => openStore(path));
      }
      try {
        const create = () => createOwners({ store, clock: createClock() }).create({ email: args.email!, name: args.name });
        const { key } = dataDir === undefined ? await create() : await writingDataDir(dataDir, create);
        process.stdout.write(key + "\n");
      } catch (error) {
        if (error instanceof HttpError) throw new Error(error.message);
        throw error;
      } finally {
        store.close();
      }
    }),
});

export const ownerCommand = defineCommand({
  meta: { name: "owner", description: "Manage owner (first-level) accounts" },
  subCommands: { create: createCommand },
  setup: requireSubCommand("router owner", ["create"]),
});
