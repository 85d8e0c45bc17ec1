import { join } from "node:path";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { testCertificates } from "../test/helpers/tls.ts";
import { headersFor, NONSTREAM_BODY, PATH } from "./bench/phases.ts";
import { startBenchMock } from "./bench/mock.ts";
import { configureRouter, startRouter } from "./bench/router.ts";
import { runWrk, wrkScript } from "./bench/wrk.ts";

const work = mkdtempSync(join(tmpdir(), "heap-"));
const certs = testCertificates();
const mock = await startBenchMock(work, certs);
const tree = process.cwd();
const dir = process.argv[2] ?? join(work, "heap");
const router = await startRouter({
  name: "router heap",
  cmd: [process.execPath, "--heap-prof-md", `--heap-prof-dir=${dir}`, `--heap-prof-interval=${process.env.INTERVAL ?? "16384"}`, join(tree, "src", "main.ts")],
  cwd: tree, dataDir: join(work, "data"), logFile: join(work, "router.log"), caFile: certs.caFile, trust: "env",
  extraEnv: { BUN_CONFIG_MAX_HTTP_REQUESTS: "65535" },
});
const key = await configureRouter(router, mock.url);
const target = { name: "router", url: router.url, key, pid: router.pid };
const script = wrkScript(work, "heap", NONSTREAM_BODY, headersFor(target as any, {}), {});
await runWrk({ url: router.url + PATH, script, connections: Number(process.env.C ?? 1), seconds: 2 });
const r = await runWrk({ url: router.url + PATH, script, connections: Number(process.env.C ?? 1), seconds: 5 });
console.log("requests", r.requests);
await router.stop(20_000);
await mock.stop();
console.log("dir", dir);
