import { defineCommand } from "citty";
import { databasePath } from "../deps.ts";
import { prepareDataDir } from "../store/data-dir.ts";
import { Database } from "bun:sqlite";
import { migrate } from "../store/migrate.ts";
import { migrations } from "../store/migrations/index.ts";
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
      const sqlite = new Database(databasePath(dataDir), { create: true, strict: true });
      try {
        sqlite.run("PRAGMA busy_timeout = 5000");
        const applied = migrate(sqlite, migrations);
        process.stdout.write(
          applied.length === 0 ? "database is up to date\n" : applied.map((name) => `applied ${name}\n`).join(""),
        );
      } finally {
        sqlite.close();
      }
    }),
});
