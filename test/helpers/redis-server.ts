import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A throwaway redis-server for tests: 127.0.0.1, a free port, a temporary directory,
 * no persistence. Tests that need Redis start one and stop it in afterAll.
 *
 * Without the binary the suite fails with a message naming the Debian package, never
 * skips silently; ROUTER_TEST_SKIP_SERVICES=1 opts out knowingly (the suites that need a
 * server are then not registered at all: see `servicesSkipped`).
 */

/** Whether suites needing a database or Redis server are left out of this run. */
export const servicesSkipped = process.env.ROUTER_TEST_SKIP_SERVICES === "1";

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  /** Stops the server (its data is gone); `start` brings up an empty one on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Freezes the server (SIGSTOP): connections stay open and nothing is answered, until `resume`. */
  pause(): void;
  resume(): void;
  /** Stops the server and removes its directory. */
  close(): Promise<void>;
}

function freePort(): number {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
}

async function answers(port: number): Promise<boolean> {
  try {
    const socket = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } });
    socket.end();
    return true;
  } catch {
    return false;
  }
}

/** `tls`: serve TLS only (no plain port) with this certificate and key; `password`: require it. */
export async function startRedisServer(options: { tls?: { certFile: string; keyFile: string; caFile: string }; password?: string } = {}): Promise<RedisServer> {
  const binary = Bun.which("redis-server");
  if (!binary) throw new Error("redis-server is not installed: install the Debian package `redis-server` (apt-get install -y redis-server), or set ROUTER_TEST_SKIP_SERVICES=1 to leave the Redis suites out");
  const dir = mkdtempSync(join(tmpdir(), "router-redis-"));
  const port = freePort();
  let process: ReturnType<typeof Bun.spawn> | undefined;

  const start = async () => {
    const listen = options.tls
      ? ["--port", "0", "--tls-port", String(port), "--tls-cert-file", options.tls.certFile, "--tls-key-file", options.tls.keyFile, "--tls-ca-cert-file", options.tls.caFile, "--tls-auth-clients", "no"]
      : ["--port", String(port)];
    const auth = options.password ? ["--requirepass", options.password] : [];
    process = Bun.spawn([binary, ...listen, ...auth, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir], { cwd: dir, stdout: "ignore", stderr: "pipe" });
    const deadline = Date.now() + 10_000;
    while (!(await answers(port))) {
      if (process.exitCode !== null || Date.now() > deadline) {
        const stderr = process.stderr instanceof ReadableStream ? await new Response(process.stderr).text() : "";
        throw new Error(`redis-server did not start on port ${port}: ${stderr.trim()}`);
      }
      await Bun.sleep(20);
    }
  };
  const stop = async () => {
    if (!process) return;
    process.kill("SIGCONT");
    process.kill("SIGKILL");
    await process.exited;
    process = undefined;
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop,
    start,
    pause: () => process?.kill("SIGSTOP"),
    resume: () => process?.kill("SIGCONT"),
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
