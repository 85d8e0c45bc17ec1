/**
 * Where a Worker's module is, given its path below src/ (`store/sqlite/upkeep-worker.ts`).
 * From source: that file. In the executable: its embedded root, where every entrypoint
 * keeps its path below src/; scripts/build.ts must list the module as an entrypoint.
 */
export function workerUrl(pathBelowSrc: string): string {
  return import.meta.url.startsWith("file:///$bunfs/") ? `/$bunfs/root/${pathBelowSrc}` : new URL(`../${pathBelowSrc}`, import.meta.url).href;
}
