import { existsSync } from "node:fs";
import { defineCommand } from "citty";
import { databasePath, prepareDataDir, writingDataDir } from "../store/data-dir.ts";
import { migrateFile } from "../store/sqlite/connection.ts";
import { databaseUrl } from "./database-flag.ts";
import { flagOrEnv, rejectEmptyValues, rejectStrayArguments, rejectUnknownFlags, UsageError } from "./flags.ts";
import { runOrExit } from "./run.ts";

const migrateArgs = {
  data: { type: "string", description: "Data directory (env ROUTER_DATA; default ./data)", valueHint: "dir" },
  database: {
    type: "string",
    description: "Migrate this PostgreSQL database instead (env ROUTER_DATABASE, the way to pass a password)",
    valueHint: "postgres://…",
  },
} as const;

const report = (applied: string[], where = "") =>
  applied.length === 0 ? `${where}database is up to date\n` : applied.map((name) => `${where}applied ${name}\n`).join("");

export const migrateCommand = defineCommand({
  meta: { name: "migrate", description: "Apply pending database migrations and exit (serve does this too)" },
  args: migrateArgs,
  run: ({ args, rawArgs }) =>
    runOrExit(async () => {
      rejectUnknownFlags(rawArgs, migrateArgs);
      rejectEmptyValues(rawArgs, args, migrateArgs);
      rejectStrayArguments(args);
      if (args.data && args.database) throw new UsageError("give --data (SQLite) or --database (PostgreSQL), not both");
      // A flag on the command line wins over the environment: `--data DIR` migrates that
      // SQLite file even where ROUTER_DATABASE is set for the service.
      const url = args.data ? undefined : databaseUrl(args.database, "database");
      if (url !== undefined) {
        // Loaded here: the SQLite path never needs the PostgreSQL store.
        const { migrateDatabase } = await import("../store/postgres/index.ts");
        const { shownUrl } = await import("../store/postgres/url.ts");
        // Run with the service's environment, it must not migrate under instances of another
        // generation (README "Upgrading instances"): serve refuses them the same way.
        const redis = process.env.ROUTER_REDIS;
        if (redis) {
          const { refuseOtherGenerations } = await import("../state/redis/versions.ts");
          await refuseOtherGenerations(redis, { warn: (message) => process.stderr.write(`router: warning: ${message}\n`) });
        }
        process.stdout.write(report(await migrateDatabase(url), `PostgreSQL at ${shownUrl(url)}: `));
        return;
      }
      const dataDir = flagOrEnv(args, "data") ?? "./data";
      const notice = prepareDataDir(dataDir);
      if (notice) process.stderr.write(`router: ${notice}\n`);
      const path = databasePath(dataDir);
      const existed = existsSync(path);
      const applied = await writingDataDir(dataDir, () => migrateFile(path));
      process.stdout.write(report(applied));
      // Creating one ahead of the first start is a use; a mistyped --data is the other,
      // and a list of "applied" lines alone would not tell the two apart.
      if (!existed) process.stdout.write(`created a new database at ${path} (there was none; if you meant an existing deployment, check --data)\n`);
    }),
});
