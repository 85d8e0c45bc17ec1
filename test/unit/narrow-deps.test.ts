import { expect, test } from "bun:test";
import { dirname, join, relative, resolve } from "node:path";

/**
 * Issue 14, item 7: route plugins and domain modules declare the few collaborators
 * they use, each in its own small interface, instead of taking the whole `Deps` bag
 * from the composition root. This guards that no file of src/ but the composition
 * itself imports `src/deps.ts` again (which would let it reach everything).
 */
const ROOT = join(import.meta.dir, "..", "..");
const COMPOSITION_ROOT = join(ROOT, "src", "deps.ts");
const FOLDERS = ["src"];
const FILES: string[] = [];

/** Files allowed to import deps.ts, each with the reason: the composition, nothing else. */
const ALLOWED = new Map<string, string>([
  ["src/deps.ts", "the composition root itself"],
  ["src/app.ts", "composes the route plugins, handing each the full Deps (which satisfies every narrow interface)"],
  ["src/server.ts", "runs the composed app: the bridge, the hot routes, shutdown hooks"],
  ["src/cli/serve.ts", "builds the Deps from the flags and starts the server"],
]);

/** Every module a file names: static imports and re-exports, side-effect imports, dynamic `import()`. */
function specifiers(source: string): string[] {
  const patterns = [
    /\b(?:import|export)\b[^;"'`]*?\bfrom\s*["']([^"']+)["']/g,
    /\bimport\s*["']([^"']+)["']/g,
    /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g,
  ];
  return patterns.flatMap((pattern) => [...source.matchAll(pattern)].map((match) => match[1]!));
}

/** Whether a specifier written in `file` names the composition root (with or without its extension). */
function namesCompositionRoot(file: string, specifier: string): boolean {
  if (!specifier.startsWith(".")) return false;
  const target = resolve(dirname(file), specifier);
  return [COMPOSITION_ROOT, COMPOSITION_ROOT.replace(/\.ts$/, ""), COMPOSITION_ROOT.replace(/\.ts$/, ".js")].includes(target);
}

async function importsCompositionRoot(file: string): Promise<boolean> {
  const source = await Bun.file(file).text();
  return specifiers(source).some((specifier) => namesCompositionRoot(file, specifier));
}

async function checkedFiles(): Promise<string[]> {
  const files = [...FILES.map((file) => join(ROOT, file))];
  for (const folder of FOLDERS) {
    for await (const path of new Bun.Glob("**/*.{ts,tsx}").scan({ cwd: join(ROOT, folder), absolute: true })) files.push(path);
  }
  return files.sort();
}

test("the import check recognises every way of naming deps.ts, and only deps.ts", () => {
  const file = join(ROOT, "src", "admin", "x", "routes.ts");
  expect(specifiers('import type { Deps } from "../../deps.ts";').some((s) => namesCompositionRoot(file, s))).toBe(true);
  expect(specifiers('import {\n  buildDeps,\n  type Deps,\n} from "../../deps";').some((s) => namesCompositionRoot(file, s))).toBe(true);
  expect(specifiers('export type { Deps } from "../../deps.js";').some((s) => namesCompositionRoot(file, s))).toBe(true);
  expect(specifiers('const d = await import("../../deps.ts");').some((s) => namesCompositionRoot(file, s))).toBe(true);
  expect(specifiers('import "../../deps.ts";').some((s) => namesCompositionRoot(file, s))).toBe(true);
  // A narrow helper whose name ends the same way is not the composition root.
  expect(specifiers('import type { AuthPluginDeps } from "../../http/auth-deps.ts";').some((s) => namesCompositionRoot(file, s))).toBe(false);
  expect(specifiers('import type { X } from "./deps.ts";').some((s) => namesCompositionRoot(file, s))).toBe(false);
});

test("the check sees a real importer: the app, which composes the routes from the full Deps", async () => {
  expect(await importsCompositionRoot(join(ROOT, "src", "app.ts"))).toBe(true);
});

test("no route plugin or domain module imports deps.ts: only the composition does", async () => {
  const files = await checkedFiles();
  // The folders exist and hold the modules this guards (a wrong path would pass vacuously).
  expect(files.some((file) => file.endsWith(join("admin", "provider-keys", "routes.ts")))).toBe(true);
  expect(files.some((file) => file.endsWith(join("gateway", "pipeline.ts")))).toBe(true);
  expect(files.length).toBeGreaterThan(150);
  const offenders: string[] = [];
  for (const file of files) {
    const name = relative(ROOT, file).split("\\").join("/");
    if (!ALLOWED.has(name) && (await importsCompositionRoot(file))) offenders.push(name);
  }
  expect(offenders).toEqual([]);
});
