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
