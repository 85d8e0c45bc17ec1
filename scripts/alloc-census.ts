/**
 * `bun scripts/alloc-census.ts [--stream] [--calls N] [--config JSON]`: what one model call allocates on
 * the router's JavaScript heap, by kind of cell (objects, closures and their scopes,
 * promises, strings, …), against a bare proxy doing the same call in the same process.
 *
 * A collection every few hundred calls is what the c=1 p99 is made of (docs/benchmarks.md),
 * and how often it comes is set by how much each call allocates: this says where to look.
 * The router runs in this process from source, configured as the benchmark configures
 * it, with the mock upstream in a process of its own. After a warm-up and a full
 * collection, N calls are made one at a time (fewer than start a collection), and the
 * heap's cell counts are read before and after: what was allocated since, garbage
 * included. The client's own allocations are in both figures; the difference is the
 * router's. Counts, not bytes: JSC reports no allocation volume per kind.
 *
 * `--config` merges serve settings into the router's (an ablation: `'{"requestLogDays":0}'`).
 *
 * The upstream CA reaches the runtime through NODE_EXTRA_CA_CERTS, as the executable's
 * re-launch does: the script starts itself again with it set.
 */
import { heapStats } from "bun:jsc";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { testCertificates } from "../test/helpers/tls.ts";
import { startRouter } from "../test/helpers/router.ts";
import { startBenchMock } from "./bench/mock.ts";
import { configureRouter } from "./bench/router.ts";
import { NONSTREAM_BODY, PATH, STREAM_BODY } from "./bench/phases.ts";

const args = process.argv.slice(2);
const stream = args.includes("--stream");
const callsAt = args.indexOf("--calls");
const CALLS = callsAt >= 0 ? Number(args[callsAt + 1]) : 150;
const configAt = args.indexOf("--config");
const extraConfig = configAt >= 0 ? (JSON.parse(args[configAt + 1]!) as Record<string, unknown>) : {};
const WARM_UP = 1500;

if (!process.env.ALLOC_CENSUS_CA) {
  const certs = testCertificates();
  const child = Bun.spawn([process.execPath, import.meta.path, ...args], {
    env: { ...process.env, ALLOC_CENSUS_CA: certs.caFile, NODE_EXTRA_CA_CERTS: certs.caFile, ALLOC_CENSUS_CERT: certs.certFile, ALLOC_CENSUS_KEY: certs.keyFile },
    stdout: "inherit",
    stderr: "inherit",
  });
  process.exit(await child.exited);
}

type Counts = Record<string, number>;
/** Cells of each kind allocated per call, the kinds with at least half a cell a call, most first. */
function perCall(before: Counts, after: Counts): Array<[string, number]> {
  const kinds = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...kinds]
    .map((kind): [string, number] => [kind, ((after[kind] ?? 0) - (before[kind] ?? 0)) / CALLS])
    .filter(([, n]) => n >= 0.5)
    .sort((x, y) => y[1] - x[1]);
}

const work = mkdtempSync(join(tmpdir(), "alloc-census-"));
const mock = await startBenchMock(work, { certFile: process.env.ALLOC_CENSUS_CERT!, keyFile: process.env.ALLOC_CENSUS_KEY! });
const router = await startRouter({ pricing: false, config: { upstreamCaFile: undefined, logLevel: "warn", ...extraConfig } });
const key = await configureRouter(router, mock.url);
const body = stream ? STREAM_BODY : NONSTREAM_BODY;
const floor = Bun.serve({
  port: 0,
  async fetch(request) {
    const upstream = await fetch(mock.url + PATH, { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer floor" }, body: await request.arrayBuffer() });
    return new Response(upstream.body, { status: upstream.status, headers: upstream.headers });
  },
});

const call = async (base: string) => {
  const response = await fetch(base + PATH, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${key}` }, body });
  if (response.status !== 200) throw new Error(`${base}: ${response.status} ${await response.text()}`);
  await response.arrayBuffer();
};
const census = async (base: string) => {
  for (let i = 0; i < WARM_UP; i++) await call(base);
  // Settlements and the request log's batch run after the answers: let them, then collect.
  await Bun.sleep(400);
  Bun.gc(true);
  const before = heapStats();
  for (let i = 0; i < CALLS; i++) await call(base);
  const after = heapStats();
  const kinds = perCall(before.objectTypeCounts, after.objectTypeCounts);
  return { cells: kinds.reduce((sum, [, n]) => sum + n, 0), kinds };
};

try {
  const floorCensus = await census(`http://127.0.0.1:${floor.port}`);
  const routerCensus = await census(router.url);
  const floorKinds = new Map(floorCensus.kinds);
  console.log(`${stream ? "streaming" : "non-streaming"} call, ${CALLS} calls after ${WARM_UP} to warm up; cells allocated per call (client included in both)`);
  console.log(`kind                             router    floor   router-floor`);
  for (const [kind, n] of routerCensus.kinds) {
    const f = floorKinds.get(kind) ?? 0;
    console.log(`${kind.padEnd(30)} ${n.toFixed(1).padStart(8)} ${f.toFixed(1).padStart(8)} ${(n - f).toFixed(1).padStart(14)}`);
  }
  console.log(`${"all kinds above".padEnd(30)} ${routerCensus.cells.toFixed(0).padStart(8)} ${floorCensus.cells.toFixed(0).padStart(8)} ${(routerCensus.cells - floorCensus.cells).toFixed(0).padStart(14)}`);
} finally {
  floor.stop(true);
  await router.stop();
  await mock.stop();
}
