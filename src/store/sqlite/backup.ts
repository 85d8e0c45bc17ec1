import { Database } from "bun:sqlite";
import { workerUrl } from "../../core/worker-url.ts";
import { vacuumInto } from "./vacuum.ts";

/** The copy on a worker thread, so this thread can animate progress; in-thread if workers are unavailable. */
export async function copyDatabase(source: string, target: string): Promise<void> {
  let worker: Worker;
  try {
    worker = new Worker(workerUrl("store/sqlite/backup-worker.ts"));
  } catch {
    vacuumInto(source, target);
    return;
  }
  try {
    await new Promise<void>((done, fail) => {
      worker.onmessage = (event: MessageEvent<{ ok: boolean; message?: string; code?: string }>) =>
        event.data.ok ? done() : fail(Object.assign(new Error(`copying the database failed: ${event.data.message}`), { code: event.data.code }));
      worker.onerror = (event) => fail(new Error(`copying the database failed: ${event.message}`));
      worker.postMessage({ source, target });
    });
  } finally {
    worker.terminate();
  }
}

/** Opens the copy on its own and checks every page; returns the problem, or undefined when sound. */
export function verifyDatabase(path: string): string | undefined {
  let db: Database | undefined;
  try {
    db = new Database(path, { readonly: true });
    const rows = db.query<{ integrity_check: string }, []>("PRAGMA integrity_check").all();
    const problems = rows.map((row) => row.integrity_check).filter((line) => line !== "ok");
    if (problems.length > 0) return problems.slice(0, 5).join("; ");
    db.query("SELECT count(*) FROM sqlite_schema").get();
    return undefined;
  } catch (error) {
    return (error as Error).message;
  } finally {
    db?.close();
  }
}

