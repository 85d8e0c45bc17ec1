import { defineCommand } from "citty";
import { databasePath, prepareDataDir } from "../store/data-dir.ts";
import { migrateFile } from "../store/sqlite/connection.ts";
import { flagOrEnv, rejectUnknownFlags } from "./flags.ts";
import { runOrExit } from "./run.ts";

const migrateArgs = {
  data: { type: "string", description: "Data directory (env ROUTER_DATA; default ./data)", valueHint: "dir" },
} as const;

export const migrateCommand = defineCommand({
  meta: { name: "migrate", description: "Apply pending database migrations and exit (serve does this too)" },
  args: migrateArgs,
  run: ({ args, rawArgs }) =>
    runOrExit(() => {
      rejectUnknownFlags(rawArgs, migrateArgs);
      const dataDir = flagOrEnv(args, "data") ?? "./data";
      const notice = prepareDataDir(dataDir);
      if (notice) process.stderr.write(`router: ${notice}\n`);
      const applied = migrateFile(databasePath(dataDir));
      process.stdout.write(applied.length === 0 ? "database is up to date\n" : applied.map((name) => `applied ${name}\n`).join(""));
    }),
});
