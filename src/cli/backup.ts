/**
 * `router backup --out FILE`: a consistent copy of the live database while the
 * server runs. `VACUUM INTO` reads one snapshot of the database (WAL mode: the
 * server keeps writing meanwhile, and the copy holds exactly what was committed when
 * the copy began) and writes it compacted to a temporary file, which is checked
 * (`PRAGMA integrity_check`) before it is renamed to FILE. The copy runs in a worker
 * so a spinner can turn on a terminal.
 */
import { defineCommand } from "citty";
import { chmodSync, copyFileSync, existsSync, renameSync, rmSync, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { loadSecretKey } from "../store/crypto.ts";
import { keyOpensDatabase } from "../store/sqlite/sealed-probe.ts";
import { databasePath, writingIn } from "../store/data-dir.ts";
import { copyDatabase, verifyDatabase } from "../store/sqlite/backup.ts";
import { dataArgs } from "./common-args.ts";
import { flagOrEnv, rejectEmptyValues, rejectStrayArguments, rejectUnknownFlags, UsageError } from "./flags.ts";
import { formatBytes } from "./output.ts";
import { runOrExit } from "./run.ts";

const backupArgs = {
  out: { type: "string", description: "File to write the backup to (required)", valueHint: "file" },
  ...dataArgs,
  force: { type: "boolean", description: "Overwrite FILE (and its secret key copy) if it exists" },
  "with-secret-key": {
    type: "boolean",
    description: "Also copy the secret key next to the backup (FILE without .db + .secret.key, mode 0600)",
  },
} as const;

/** `backup.db` → `backup.secret.key`; any other name gets `.secret.key` appended. */
export function secretKeyCopyPath(out: string): string {
  return (out.endsWith(".db") ? out.slice(0, -3) : out) + ".secret.key";
}

/** Removes a partial copy; one that cannot be removed (a read-only disk) must not hide why the copy failed. */
function removeQuietly(path: string): void {
  try {
    rmSync(path, { force: true });
  } catch {
    // the copy's own error is the one to report
  }
}

/** A spinner with the bytes written so far, on stderr when it is a terminal; nothing otherwise. */
function startProgress(target: string, expected: number): () => void {
  if (!process.stderr.isTTY) return () => {};
  const frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
  let frame = 0;
  const draw = () => {
    let written = 0;
    try {
      written = statSync(target).size;
    } catch {
      // not created yet
    }
    const percent = expected > 0 ? ` (${Math.min(99, Math.floor((written / expected) * 100))}%)` : "";
    process.stderr.write(`\r\x1b[K${frames[frame++ % frames.length]} copying the database: ${formatBytes(written)} of about ${formatBytes(expected)}${percent}`);
  };
  draw();
  const timer = setInterval(draw, 100);
  return () => {
    clearInterval(timer);
    process.stderr.write("\r\x1b[K");
  };
}

export const backupCommand = defineCommand({
  meta: {
    name: "backup",
    description: "Copy the database consistently while the server runs, and check the copy",
  },
  args: backupArgs,
  run: ({ args, rawArgs }) =>
    runOrExit(async () => {
      rejectUnknownFlags(rawArgs, backupArgs);
      rejectEmptyValues(rawArgs, args, backupArgs);
      rejectStrayArguments(args);
      if (!args.out) throw new UsageError("--out FILE is required; see --help");
      const dataDir = flagOrEnv(args, "data") ?? "./data";
      const source = resolve(databasePath(dataDir));
      const out = resolve(args.out);
      if (!existsSync(source)) throw new Error(`no database at ${source}; is --data right?`);
      if ([source, `${source}-wal`, `${source}-shm`].includes(out)) throw new UsageError("--out must not be the live database");
      if (existsSync(out) && statSync(out).isDirectory()) throw new UsageError(`--out ${out} is a directory; give the file to write, e.g. ${join(out, "router-backup.db")}`);
      if (!existsSync(dirname(out))) throw new Error(`the directory of --out, ${dirname(out)}, does not exist`);
      if (existsSync(out) && !args.force) throw new Error(`${out} exists; repeat with --force to overwrite it`);

      const withKey = args["with-secret-key"] === true;
      const keySource = resolve(flagOrEnv(args, "secret-key-file") ?? join(dataDir, "secret.key"));
      const keyTarget = secretKeyCopyPath(out);
      if (withKey) {
        if (!existsSync(keySource)) throw new Error(`no secret key at ${keySource}; give --secret-key-file`);
        if (existsSync(keyTarget) && !args.force) throw new Error(`${keyTarget} exists; repeat with --force to overwrite it`);
      }

      // Written beside FILE and renamed only once checked: FILE is never a partial or broken copy.
      const temporary = `${out}.partial-${process.pid}`;
      const expected = statSync(source).size + (existsSync(`${source}-wal`) ? statSync(`${source}-wal`).size : 0);
      const started = performance.now();
      // A full or read-only disk is named with the directory of --out, not as "database or disk is full".
      await writingIn(`cannot write the backup to ${dirname(out)}`, dirname(out), async () => {
        rmSync(temporary, { force: true });
        const stopProgress = startProgress(temporary, expected);
        try {
          await copyDatabase(source, temporary);
        } catch (error) {
          removeQuietly(temporary);
          throw error;
        } finally {
          stopProgress();
        }
      });
      if (process.stderr.isTTY) process.stderr.write("checking the copy (integrity_check)…");
      const problem = verifyDatabase(temporary);
      if (process.stderr.isTTY) process.stderr.write("\r\x1b[K");
      if (problem !== undefined) {
        rmSync(temporary, { force: true });
        throw new Error(`the copy failed its integrity check (${problem}); nothing was written to ${out}`);
      }
      // The key put beside the copy must open it: after `router rekey` the default secret.key may be the old one.
      if (withKey && !keyOpensDatabase(temporary, loadSecretKey(keySource, "--secret-key-file"))) {
        rmSync(temporary, { force: true });
        throw new Error(
          `the key in ${keySource} does not open the secrets in this database (was it rotated with \`router rekey\`?): give the key the router runs with, --secret-key-file FILE; nothing was written to ${out}`,
        );
      }
      try {
        chmodSync(temporary, 0o600);
        renameSync(temporary, out);
      } catch (error) {
        rmSync(temporary, { force: true });
        throw new Error(`cannot write ${out}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
      }
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      process.stdout.write(`backup written to ${out} (${formatBytes(statSync(out).size)}, ${seconds} s); integrity check ok\n`);

      if (withKey) {
        copyFileSync(keySource, keyTarget);
        chmodSync(keyTarget, 0o600);
        process.stdout.write(`secret key copied to ${keyTarget} (mode 0600); store both together, and safely\n`);
      } else if (existsSync(keySource) && keyOpensDatabase(out, loadSecretKey(keySource, "--secret-key-file"))) {
        process.stdout.write(
          `keep ${basename(keySource)} (${keySource}) with this backup: without it the provider secrets in it cannot be opened ` +
            "(or repeat with --with-secret-key)\n",
        );
      } else {
        // After `router rekey` the file at the default place may be the old key: naming it would send the operator away with the wrong one.
        const why = existsSync(keySource) ? ` (${keySource} does not open them: the key was rotated with \`router rekey\`)` : "";
        process.stdout.write(`keep the key the router runs with beside this backup: without it the provider secrets in it cannot be opened${why}\n`);
      }
    }),
});
