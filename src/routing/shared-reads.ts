/**
 * Reads of the shared State that calls within `ms` of each other share, one per key (a
 * Level): on Redis each read is a script ahead of the call's admission. A read that
 * fails is not shared; `forget` drops them all (this process changed what they read, or
 * another instance said it did). With `ms` 0 nothing is shared.
 */
export function createSharedReads<Read>(ms: number, now: () => number) {
  const reads = new Map<number, { read: Read; at: number }>();
  return {
    /** The read calls may share for `key`, when there is one young enough and `usable` says it still fits. */
    get(key: number, usable: (read: Read) => boolean = () => true): Read | undefined {
      const entry = reads.get(key);
      if (!entry) return undefined;
      const at = now();
      return at - entry.at < ms && at >= entry.at && usable(entry.read) ? entry.read : undefined;
    },
    /** Shares `read` for `key` from now on; `answer` is its State call, whose failure ends the sharing. */
    keep(key: number, read: Read, answer: Promise<unknown>): Read {
      if (ms <= 0) return read;
      const entry = { read, at: now() };
      reads.set(key, entry);
      answer.catch(() => {
        if (reads.get(key) === entry) reads.delete(key);
      });
      return read;
    },
    forget(key?: number): void {
      if (key === undefined) reads.clear();
      else reads.delete(key);
    },
  };
}
