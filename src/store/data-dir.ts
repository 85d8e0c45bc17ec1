import { accessSync, constants, existsSync, mkdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";

/** Creates the data directory if needed and checks it is a writable directory; throws a one-line reason. */
export function prepareDataDir(dir: string): void {
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
}

/** Removes multipart uploads a crash left half-spooled in `<data>/tmp`. */
export function clearSpool(dataDir: string): void {
  rmSync(join(dataDir, "tmp"), { recursive: true, force: true });
}
