import { SQL } from "bun";
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A throwaway PostgreSQL cluster for tests: `initdb` into a temp directory, then
 * `postgres` on 127.0.0.1 and a free port, as the non-root `postgres` user when the
 * tests run as root (PostgreSQL refuses to run as root). Without the server installed
 * it fails naming the Debian package, unless ROUTER_TEST_SKIP_SERVICES=1, in which case
 * suites that need it are not registered at all (see `skipServices`).
 */

/** True when the developer chose to leave out suites that need PostgreSQL or Redis. */
export const skipServices = process.env.ROUTER_TEST_SKIP_SERVICES === "1";

export interface PostgresServer {
  readonly port: number;
  /** A URL for one database of the cluster (`postgres` by default). */
  url(database?: string): string;
  /** Creates a database copying `template` (an empty one by default) and returns its name. */
  createDatabase(template?: string): Promise<string>;
  /** Drops a database, closing whatever is still connected to it. */
  dropDatabase(name: string): Promise<void>;
  /** Takes the server down (an outage: every connection drops), keeping its data; `resume` brings it back on the same port. */
  halt(): Promise<void>;
  resume(): Promise<void>;
  stop(): Promise<void>;
}

/** The newest installed server's bin directory (the Debian layout), or undefined. */
function binDir(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, "bin", "postgres")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], "bin");
}

function freePort(): number {
  const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = listener.port;
  listener.stop(true);
  return port;
}

function uidOf(user: string): { uid: number; gid: number } {
  const line = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((l) => l.startsWith(`${user}:`));
  if (!line) throw new Error(`no "${user}" user: install the Debian package postgresql, which creates it`);
  const [, , uid, gid] = line.split(":");
  return { uid: Number(uid), gid: Number(gid) };
}

let databases = 0;

/** `tls`: serve TLS with this certificate and key (PEM files), for tests of `sslmode`. */
export async function startPostgres(options: { tls?: { certFile: string; keyFile: string } } = {}): Promise<PostgresServer> {
  const bin = binDir();
  if (!bin) {
    throw new Error(
      "PostgreSQL is not installed: these tests start a throwaway server. Install the Debian package `postgresql` (apt-get install -y postgresql), or set ROUTER_TEST_SKIP_SERVICES=1 to leave these suites out.",
    );
  }
  const asRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), "router-pg-"));
  const data = join(dir, "data");
  const sockets = join(dir, "sockets");
  mkdirSync(sockets);
  if (asRoot) {
    const { uid, gid } = uidOf("postgres");
    chownSync(dir, uid, gid);
    chownSync(sockets, uid, gid);
  }
  const as = (command: string[]) => (asRoot ? ["runuser", "-u", "postgres", "--", ...command] : command);

  const init = Bun.spawnSync(as([join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"]), {
    stdout: "pipe",
    stderr: "pipe",
  });
  if (init.exitCode !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed: ${init.stderr.toString()}`);
  }

  const port = freePort();
  const logFile = join(dir, "postgres.log");
  // PostgreSQL reads its key only when it is private to the server's user.
  const tlsArgs: string[] = [];
  if (options.tls) {
    const cert = join(dir, "server.crt");
    const key = join(dir, "server.key");
    copyFileSync(options.tls.certFile, cert);
    copyFileSync(options.tls.keyFile, key);
    chmodSync(key, 0o600);
    if (asRoot) {
      const { uid, gid } = uidOf("postgres");
      chownSync(cert, uid, gid);
      chownSync(key, uid, gid);
    }
    tlsArgs.push("-c", "ssl=on", "-c", `ssl_cert_file=${cert}`, "-c", `ssl_key_file=${key}`);
  }
  // fsync off: a test cluster is thrown away, and durability only slows it down.
  const spawnServer = () =>
    Bun.spawn(
      as([join(bin, "postgres"), "-D", data, "-p", String(port), "-k", sockets, "-h", "127.0.0.1", "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=200", ...tlsArgs]),
      { stdout: Bun.file(logFile), stderr: Bun.file(logFile) },
    );
  let server = spawnServer();
  const url = (database = "postgres") => `postgres://postgres@127.0.0.1:${port}/${database}`;
  const log = () => (existsSync(logFile) ? readFileSync(logFile, "utf8").slice(-2000) : "");

  let admin: SQL | undefined;
  for (let attempt = 0; attempt < 300 && !admin; attempt++) {
    if (server.exitCode !== null) break;
    const client = new SQL(url(), { max: 2 });
    try {
      await client`SELECT 1`;
      admin = client;
    } catch {
      await client.close().catch(() => {});
      await Bun.sleep(100);
    }
  }
  // With runuser in between, the postmaster is not our child: stop it by the pid it wrote.
  const postmasterPid = () => {
    const file = join(data, "postmaster.pid");
    return existsSync(file) ? Number(readFileSync(file, "utf8").split("\n")[0]) : undefined;
  };
  /** Stops the postmaster and waits until it is gone (fast shutdown: sessions are ended). */
  const shutDown = async () => {
    const pid = postmasterPid();
    if (pid) {
      try {
        process.kill(pid, "SIGINT");
      } catch {}
    }
    server.kill("SIGINT");
    await Promise.race([server.exited, Bun.sleep(10_000)]);
    if (pid) {
      for (let i = 0; i < 100; i++) {
        try {
          process.kill(pid, 0);
        } catch {
          break;
        }
        await Bun.sleep(50);
      }
    }
  };
  const stop = async () => {
    await admin?.close().catch(() => {});
    await shutDown();
    rmSync(dir, { recursive: true, force: true });
  };
  if (!admin) {
    const tail = log();
    await stop();
    throw new Error(`PostgreSQL did not start:\n${tail}`);
  }
  const ready = admin;

  return {
    port,
    url,
    async createDatabase(template = "template0") {
      const name = `router_test_${process.pid}_${++databases}`;
      await ready.unsafe(`CREATE DATABASE ${name} TEMPLATE ${template}`);
      return name;
    },
    async dropDatabase(name) {
      await ready.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
    async halt() {
      await shutDown();
    },
    async resume() {
      server = spawnServer();
      for (let attempt = 0; attempt < 300; attempt++) {
        if (server.exitCode !== null) throw new Error(`PostgreSQL did not start again:\n${log()}`);
        const client = new SQL(url(), { max: 1 });
        try {
          await client`SELECT 1`;
          await client.close();
          return;
        } catch {
          await client.close().catch(() => {});
          await Bun.sleep(100);
        }
      }
      throw new Error(`PostgreSQL did not start again:\n${log()}`);
    },
    stop,
  };
}
