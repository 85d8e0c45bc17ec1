import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "./temp-dir.ts";

export interface TestCertificates {
  /** PEM of the test CA, to trust in the router under test. */
  caPem: string;
  caFile: string;
  /** Server certificate for localhost/127.0.0.1, signed by the CA. */
  certPem: string;
  keyPem: string;
  certFile: string;
  keyFile: string;
}

let cached: TestCertificates | undefined;

function openssl(dir: string, args: string[]): void {
  const proc = Bun.spawnSync(["openssl", ...args], { cwd: dir, stdout: "pipe", stderr: "pipe" });
  if (proc.exitCode !== 0) throw new Error(`openssl ${args[0]} failed: ${proc.stderr.toString()}`);
}

/** A throwaway CA and a localhost certificate, made once per test process with openssl. */
export function testCertificates(): TestCertificates {
  if (cached) return cached;
  const dir = tempDir("router-tls-");
  openssl(dir, ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key"]);
  openssl(dir, [
    "req", "-x509", "-new", "-key", "ca.key", "-out", "ca.pem", "-days", "3", "-subj", "/CN=router test CA",
    "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
  ]);
  openssl(dir, ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "server.key"]);
  openssl(dir, ["req", "-new", "-key", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"]);
  writeFileSync(
    join(dir, "server.ext"),
    "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
  );
  openssl(dir, [
    "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
    "-out", "server.pem", "-days", "3", "-extfile", "server.ext",
  ]);
  cached = {
    caPem: readFileSync(join(dir, "ca.pem"), "utf8"),
    caFile: join(dir, "ca.pem"),
    certPem: readFileSync(join(dir, "server.pem"), "utf8"),
    keyPem: readFileSync(join(dir, "server.key"), "utf8"),
    certFile: join(dir, "server.pem"),
    keyFile: join(dir, "server.key"),
  };
  return cached;
}

/**
 * A WSS realtime upstream on 127.0.0.1 (its certificate signed by the test CA) that
 * greets each session with `session.created` and ignores what it is sent.
 */
export function greetingRealtimeUpstream() {
  const certs = testCertificates();
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: certs.certPem, key: certs.keyPem },
    fetch: (request, server) => (server.upgrade(request, { data: undefined }) ? undefined : new Response("no upgrade", { status: 400 })),
    websocket: { open: (ws) => void ws.send(JSON.stringify({ type: "session.created", event_id: "ev_0" })), message() {} },
  });
}
