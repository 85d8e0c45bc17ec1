import { closeSync, fdatasyncSync, ftruncateSync, openSync, readFileSync, writeSync } from "node:fs";
import { causeMessage } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import type { NewUsageEventRow } from "../store/store.ts";

/** The spool's file in the data directory. */
export const USAGE_SPOOL_FILE = "usage-spool.jsonl";

/**
 * Usage rows the database did not take, kept on disk until it does: one instance on
 * PostgreSQL without Redis has nowhere else to keep them, and a crash or a stop while
 * PostgreSQL is away would lose every charge waiting in memory. Rows are written here
 * only once a write of them failed (an outage), so the file is empty and untouched while
 * the database answers; it is emptied again once every row kept in it is in the database.
 * A row may be in the database and still in the file (a crash between the commit and the
 * emptying): rows read back at start are checked against the database before they are written.
 */
export interface UsageSpool {
  /** The rows a previous run left in the file, oldest first (to be written, checked). */
  recovered(): NewUsageEventRow[];
  /** Keeps these rows on disk (those not kept yet), synced before it returns. */
  keep(rows: readonly NewUsageEventRow[]): void;
  /** These rows are in the database (or set aside): once no kept row waits, the file is emptied. */
  written(rows: readonly NewUsageEventRow[]): void;
  /** Whether `keep` writes (false: the spool only hands out what a previous run left). */
  readonly keeping: boolean;
  /** Rows in the file not written to the database yet. */
  readonly size: number;
  close(): void;
}

/**
 * Opens the spool and reads what a previous run left. `keeping` false (instances with
 * Redis, where rows wait in Redis) only hands out those rows: several instances may
 * share a data directory then, and one file cannot be kept by several processes.
 */
export function openUsageSpool(path: string, log: Logger, keeping = true): UsageSpool {
  const fd = openSync(path, "a+", 0o600);
  const kept = new Set<NewUsageEventRow>();
  const recovered: NewUsageEventRow[] = [];
  const bytes = readFileSync(path);
  // A last line without its newline was cut short by a crash: it goes, else the first row
  // kept in this run was appended to it, and read back as one line that parses as
  // nothing, that row was lost with it (its call never charged).
  const whole = bytes.lastIndexOf(0x0a) + 1;
  if (whole < bytes.length) ftruncateSync(fd, whole);
  for (const line of bytes.toString("utf8").split("\n")) {
    if (line === "") continue;
    try {
      recovered.push(JSON.parse(line) as NewUsageEventRow);
    } catch {
      // A line cut short by a crash while it was written: its row was never told written, and its call is lost with it.
      log.error("a usage row in the spool file could not be read and is skipped", { file: path });
    }
  }
  for (const row of recovered) kept.add(row);
  if (recovered.length > 0) log.warn("usage rows a previous run could not write are written now, each once", { rows: recovered.length, file: path });

  return {
    keeping,
    get size() {
      return kept.size;
    },
    recovered: () => recovered.splice(0),
    keep(rows) {
      if (!keeping) return;
      let text = "";
      for (const row of rows) {
        if (kept.has(row)) continue;
        kept.add(row);
        text += `${JSON.stringify(row)}\n`;
      }
      if (text === "") return;
      try {
        writeSync(fd, text);
        fdatasyncSync(fd);
      } catch (error) {
        // The rows still wait in memory, as they would without a spool.
        log.error("usage rows could not be kept on disk while the database is away", { file: path, error: causeMessage(error) });
      }
    },
    written(rows) {
      if (kept.size === 0) return;
      for (const row of rows) kept.delete(row);
      if (kept.size > 0) return;
      try {
        ftruncateSync(fd, 0);
      } catch (error) {
        // Left as it is: its rows are checked against the database when read back.
        log.warn("the usage spool file could not be emptied", { file: path, error: causeMessage(error) });
      }
    },
    close: () => closeSync(fd),
  };
}
