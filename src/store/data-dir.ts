import { accessSync, chmodSync, constants, existsSync, mkdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";

/**
 * Creates the data directory if needed (mode 0700) and checks it is a writable
 * directory; throws a one-line reason. An existing directory that others may read
 * (a clone makes `data/` 0755) holds sealed secrets and the initial owner key, so it
 * is tightened to 0700: the notice returned says so.
 */
export function prepareDataDir(dir: string): string | undefined {
  if (existsSync(dir) && !statSync(dir).isDirectory()) throw new Error(`data directory ${dir} is not a directory`);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw new Error(`cannot create data directory ${dir}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  try {
    accessSync(dir, constants.R_OK | constants.W_OK | constants.X_OK);
  } catch {
    throw new Error(`data directory ${dir} is not readable and writable by this user`);
  }
  const mode = statSync(dir).mode & 0o777;
  if ((mode & 0o077) === 0) return undefined;
  try {
    chmodSync(dir, 0o700);
  } catch (error) {
    return `data directory ${dir} is readable by other users (mode ${mode.toString(8)}) and could not be tightened: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`;
  }
  return `data directory ${dir} was readable by other users (mode ${mode.toString(8)}); tightened to 700`;
}

/** Removes multipart uploads a crash left half-spooled in `<data>/tmp`. */
export function clearSpool(dataDir: string): void {
  rmSync(join(dataDir, "tmp"), { recursive: true, force: true });
}

/** The SQLite database file of a data directory. */
export function databasePath(dataDir: string): string {
  return join(dataDir, "router.db");
}
