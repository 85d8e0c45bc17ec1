/** `router backup`'s copy on a thread of its own (see cli/backup.ts), so the command's thread can draw progress. */
import { vacuumInto } from "./vacuum.ts";

declare const self: Worker;

self.onmessage = (event: MessageEvent<{ source: string; target: string }>) => {
  try {
    vacuumInto(event.data.source, event.data.target);
    postMessage({ ok: true });
  } catch (error) {
    // The code too (SQLITE_FULL, EROFS): the command names the cause from it.
    const code = (error as { code?: unknown }).code;
    postMessage({ ok: false, message: error instanceof Error ? error.message : String(error), code: typeof code === "string" ? code : undefined });
  }
};
