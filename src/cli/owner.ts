import { defineCommand } from "citty";
import { createOwners } from "../accounts/owners.ts";
import { createClock } from "../core/clock.ts";
import { HttpError } from "../core/errors.ts";
import { databasePath, prepareDataDir } from "../store/data-dir.ts";
import { openStore } from "../store/open.ts";
import { flagOrEnv, rejectStrayArguments, rejectUnknownFlags, requireSubCommand, UsageError } from "./flags.ts";
import { runOrExit } from "./run.ts";

const createArgs = {
  email: { type: "string", description: "Email of the new owner (required)", valueHint: "email" },
  name: { type: "string", description: "Account name, 4-63 characters with a letter (default: from the email)" },
  data: { type: "string", description: "Data directory (env ROUTER_DATA; default ./data)", valueHint: "dir" },
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
      rejectStrayArguments(args);
      if (!args.email) throw new UsageError("--email is required");
      const dataDir = flagOrEnv(args, "data") ?? "./data";
      const notice = prepareDataDir(dataDir);
      if (notice) process.stderr.write(`router: ${notice}\n`);
      // Safe while a server runs on the same data dir: WAL plus a busy timeout, and
      // the server looks unknown keys up in the database, so it accepts this key at once.
      const store = openStore(databasePath(dataDir));
      try {
        const { key } = await createOwners({ store, clock: createClock() }).create({ email: args.email, name: args.name });
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
