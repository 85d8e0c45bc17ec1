import { defineCommand } from "citty";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { copyDeployment, type CopyReport } from "../store/copy/index.ts";
import { USAGE_SPOOL_FILE } from "../metering/usage-spool.ts";
import { shownUrl } from "../store/postgres/url.ts";
import { loadOrCreateSecretKey } from "../store/crypto.ts";
import { databasePath } from "../store/data-dir.ts";
import { keyOpensDatabase } from "../store/sqlite/sealed-probe.ts";
import { databaseUrl } from "./database-flag.ts";
import { rejectEmptyValues, rejectStrayArguments, rejectUnknownFlags, UsageError } from "./flags.ts";
import { formatTable } from "./output.ts";
import { runOrExit } from "./run.ts";

const migrateDataArgs = {
  from: { type: "string", description: "The deployment to copy: its data directory or its router.db", valueHint: "dir|file" },
  to: {
    type: "string",
    description: "The PostgreSQL database to fill, empty or freshly migrated (env ROUTER_DATABASE, the way to pass a password)",
    valueHint: "postgres://…",
  },
} as const;

/** Where the deployment's sealing key normally lives, next to its database. */
function secretKeyNextTo(from: string): string {
  const dir = existsSync(from) && statSync(from).isDirectory() ? from : dirname(from);
  return join(dir, "secret.key");
}

/** Which key file to start the instances with: the one beside the source only if it opens its secrets (a rotation may have left the old one there). */
function keyAdvice(from: string, key: string): string {
  const database = existsSync(from) && statSync(from).isDirectory() ? databasePath(from) : from;
  if (existsSync(key) && keyOpensDatabase(database, loadOrCreateSecretKey(key))) return `start every instance with --secret-key-file pointing at a copy of ${key}`;
  const why = existsSync(key) ? ` (${key} does not open them: the key was rotated with \`router rekey\`)` : "";
  return `start every instance with --secret-key-file pointing at a copy of the key the router ran with${why}`;
}

function summary(report: CopyReport): string {
  const { tables, balances, accounts } = report.verification;
  const table = formatTable(
    tables,
    [
      { header: "table", value: (t) => t.name },
      { header: "source", value: (t) => t.source, align: "right" },
      { header: "target", value: (t) => t.target, align: "right" },
      { header: "", value: (t) => (t.source === t.target ? "ok" : "MISMATCH") },
    ],
    "(no tables)",
    0,
  );
  const money = (nanos: number) => (nanos / 1e9).toFixed(9);
  const balanceLines =
    balances.length === 0
      ? `balances: ${accounts} accounts, equal on both sides\n`
      : `balances: ${balances.length} of ${accounts} accounts differ\n` +
        balances.map((b) => `  account ${b.accountId}: source ${money(b.source)}, target ${money(b.target)}\n`).join("");
  return table + balanceLines;
}

export const migrateDataCommand = defineCommand({
  meta: {
    name: "migrate-data",
    description: "Copy a single-machine deployment (SQLite) into an empty PostgreSQL database, ids kept, then check it",
  },
  args: migrateDataArgs,
  run: ({ args, rawArgs }) =>
    runOrExit(async () => {
      rejectUnknownFlags(rawArgs, migrateDataArgs);
      rejectEmptyValues(rawArgs, args, migrateDataArgs);
      rejectStrayArguments(args);
      if (!args.from) throw new UsageError("--from is required: the data directory (or router.db) of the deployment to copy");
      const url = databaseUrl(args.to, "to");
      if (url === undefined) throw new UsageError("--to is required (or ROUTER_DATABASE): the PostgreSQL database to copy into");

      // Usage rows a stop could not write wait in the spool next to the database; copied
      // without them they would never be charged (instances on PostgreSQL read no old spool).
      const spool = join(existsSync(args.from) && statSync(args.from).isDirectory() ? args.from : dirname(args.from), USAGE_SPOOL_FILE);
      if (existsSync(spool) && readFileSync(spool, "utf8").trim() !== "") {
        throw new UsageError(`${spool} holds usage rows not yet written: start the router once on this directory (it writes them), stop it, then copy`);
      }
      process.stdout.write(`copying ${args.from} into PostgreSQL at ${shownUrl(url)}\n`);
      // Progress is for someone watching a long copy; a pipe gets the summary only.
      const onTable = process.stderr.isTTY ? (name: string, rows: number) => process.stderr.write(`copied ${name} (${rows} rows)\n`) : undefined;
      const report = await copyDeployment({ from: args.from, to: url, onTable });
      for (const name of report.migrations) process.stdout.write(`applied ${name}\n`);
      process.stdout.write(summary(report));
      if (!report.verification.ok) {
        throw new Error(
          "the copy does not match the source (was a router still writing to it?); stop every router on the source, then copy again into a new database",
        );
      }
      const key = secretKeyNextTo(args.from);
      process.stdout.write(`copied and checked. Provider keys are still sealed with the deployment's secret key: ${keyAdvice(args.from, key)}\n`);
    }),
});
