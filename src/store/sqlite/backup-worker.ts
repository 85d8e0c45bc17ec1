/** `router backup`'s copy on a thread of its own (see cli/backup.ts), so the command's thread can draw progress. */
import { vacuumInto } from "./vacuum.ts";

declare const self: Worker;

self.onmessage = (event: MessageEvent<{ source: string; target: string }>) => {
  try {
    vacuumInto(event.data.source, event.data.target);
    postMessage({ ok: true });
  } catch (error) {
    postMessage({ ok: false, message: error instanceof Error ? error.message : String(error) });
  }
};
