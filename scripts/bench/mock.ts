/** The benchmark's mock upstream (mock-upstream.ts) in its own process, serving TLS with the test certificate. */
import { join } from "node:path";
import type { TestCertificates } from "../../test/helpers/tls.ts";
import { startService, type Service } from "./proc.ts";

export function startBenchMock(work: string, certs: Pick<TestCertificates, "certFile" | "keyFile">): Promise<Service> {
  return startService({
    name: "mock",
    cmd: [process.execPath, join(import.meta.dir, "mock-upstream.ts")],
    cwd: work,
    env: { PATH: process.env.PATH, MOCK_CERT: certs.certFile, MOCK_KEY: certs.keyFile },
    logFile: join(work, "mock.log"),
    ready: /mock listening on (\S+)/,
  });
}

/** The floor: a bare Bun proxy to the mock (floor-proxy.ts) in its own process, given the raised fetch limit, as the baseline of what Bun can do. */
export function startBenchFloor(work: string, mockUrl: string, caFile: string): Promise<Service> {
  return startService({
    name: "floor",
    cmd: [process.execPath, join(import.meta.dir, "floor-proxy.ts")],
    cwd: work,
    env: { PATH: process.env.PATH, FLOOR_UPSTREAM: mockUrl, NODE_EXTRA_CA_CERTS: caFile, BUN_CONFIG_MAX_HTTP_REQUESTS: "65535" },
    logFile: join(work, "floor.log"),
    ready: /floor listening on (\S+)/,
  });
}
