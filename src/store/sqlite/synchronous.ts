/**
 * bun:sqlite answers synchronously, so each SQLite repository is written as plain
 * functions and turned into the store's promise-returning interface once, here.
 */
export type Synchronous<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => Promise<infer R> ? (...args: A) => R : never;
};

/**
 * The promise-returning face of a synchronous repository: every call runs through
 * `run` (which serialises it with the open transaction, if any) and its throw becomes
 * a rejection, as a remote store's would.
 */
export function asynchronous<T extends object>(sync: Synchronous<T>, run: <R>(call: () => R) => Promise<R>): T {
  const out: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(sync) as Array<[string, (...args: unknown[]) => unknown]>) {
    out[name] = (...args: unknown[]) => run(() => method(...args));
  }
  // The mapping above keeps every member and turns its result into a promise: T by construction.
  return out as T;
}
