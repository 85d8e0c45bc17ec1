import { accessSync, chmodSync, constants, existsSync, mkdirSync, rmSync, statfsSync, statSync } from "node:fs";
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
    throw new Error(`cannot create the data directory ${dir}: ${causeOf(error, dir)}`);
  }
  try {
    accessSync(dir, constants.R_OK | constants.W_OK | constants.X_OK);
  } catch (error) {
    // The cause as the system gives it: a read-only mount is not a permission to fix.
    throw new Error(`cannot write to the data directory ${dir}: ${causeOf(error, dir)}`);
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

/** What the system's error codes mean, for the operator (errno, and SQLite's for its files). */
const CAUSES: Record<string, string> = {
  EROFS: "read-only file system",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  ENOSPC: "no space left on device",
  EDQUOT: "disk quota exceeded",
  SQLITE_READONLY: "read-only file system or file",
  SQLITE_CANTOPEN: "cannot open the database file",
};

/** `no space left on device (ENOSPC)`: the cause of a failed write, in words and code. */
function causeOf(error: unknown, dir: string): string {
  const code = (error as { code?: unknown }).code;
  if (typeof code !== "string") return (error as Error).message;
  // SQLite says "database or disk is full" (SQLITE_FULL), or only "disk I/O error" when its
  // shared-memory file met the full disk: the free space tells.
  if (code === "SQLITE_FULL" || (code.startsWith("SQLITE_IOERR") && noSpaceLeft(dir))) return "no space left on device (ENOSPC)";
  const family = code.startsWith("SQLITE_") ? code.replace(/^(SQLITE_[A-Z]+).*/, "$1") : code;
  const words = CAUSES[code] ?? CAUSES[family];
  return words ? `${words} (${code})` : `${(error as Error).message} (${code})`;
}

function noSpaceLeft(dir: string): boolean {
  try {
    return statfsSync(dir).bavail === 0;
  } catch {
    return false;
  }
}

/** Codes of a failure to write the disk: the data directory is the problem, not the router. */
const STORAGE_CODES = /^(EROFS|EACCES|EPERM|ENOSPC|EDQUOT|EIO|SQLITE_(FULL|READONLY|CANTOPEN|IOERR|PERM).*)$/;

/**
 * Runs the start of a command that writes the data directory (creating the database, the
 * secret key, the owner's key file) and turns a failure to write it into one line naming
 * the directory and the cause: "database or disk is full" or a stack trace named neither.
 */
export async function writingDataDir<T>(dir: string, body: () => Promise<T> | T): Promise<T> {
  try {
    return await writingIn(`cannot write to the data directory ${dir}`, dir, body);
  } catch (error) {
    // SQLite says only "file is not a database": which directory, and what to do, are the operator's questions.
    const code = (error as { code?: unknown }).code;
    if (typeof code !== "string" || !/^SQLITE_(NOTADB|CORRUPT)/.test(code)) throw error;
    throw new Error(`a database file in the data directory ${dir} is damaged or not a SQLite database (${code}); restore it from a backup`, { cause: error });
  }
}

/** As writingDataDir, for another directory a command writes (`what`: "cannot write the backup to DIR"). */
export async function writingIn<T>(what: string, dir: string, body: () => Promise<T> | T): Promise<T> {
  try {
    return await body();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (typeof code !== "string" || !STORAGE_CODES.test(code)) throw error;
    const failure = new Error(`${what}: ${causeOf(error, dir)}`);
    failure.cause = error;
    throw failure;
  }
}
