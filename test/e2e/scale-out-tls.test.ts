import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { isolatedBinary, serveBinary, type ServingBinary } from "../helpers/binary.ts";
import { skipServices, startPostgres, type PostgresServer } from "../helpers/postgres-server.ts";
import { startRedisServer, type RedisServer } from "../helpers/redis-server.ts";
import { testCertificates } from "../helpers/tls.ts";

/**
 * Managed services (issues 15, 19): the executable on a PostgreSQL that serves TLS
 * (`sslmode=verify-full`) and a Redis that serves TLS only and asks for a password
 * (`rediss://`), both with certificates of a private CA that the router trusts through
 * --upstream-ca-file alone: the trust the flag gives covers the database and Redis too.
 */
const REDIS_PASSWORD = "redis-Secret-5521";

if (!skipServices) {
  const { dir, bin } = isolatedBinary();
  const certs = testCertificates();
  let postgres: PostgresServer;
  let redis: RedisServer;
  let env: Record<string, string>;
  const running: ServingBinary[] = [];

  beforeAll(async () => {
    [postgres, redis] = await Promise.all([
      startPostgres({ tls: { certFile: certs.certFile, keyFile: certs.keyFile } }),
      startRedisServer({ tls: { certFile: certs.certFile, keyFile: certs.keyFile, caFile: certs.caFile }, password: REDIS_PASSWORD }),
    ]);
    const database = `${postgres.url(await postgres.createDatabase())}?sslmode=verify-full`;
    // The URLs through the environment, as the README recommends for URLs with passwords.
    env = { ROUTER_DATABASE: database, ROUTER_REDIS: `rediss://:${REDIS_PASSWORD}@127.0.0.1:${redis.port}`, NODE_EXTRA_CA_CERTS: "" };
  }, 60_000);

  afterAll(async () => {
    for (const server of running) server.kill("SIGKILL");
    await redis?.close();
    await postgres?.stop();
  });

  describe("PostgreSQL and Redis over TLS, with a private CA", () => {
    test("trusted through --upstream-ca-file, the router reaches both: /healthz says up, and no output shows the password", async () => {
      const server = await serveBinary(bin, ["--port", "0", "--data", "tls-data", "--upstream-ca-file", certs.caFile], { cwd: dir, env, timeoutMs: 30_000 });
      running.push(server);
      expect(await (await fetch(`${server.url}/healthz`)).json()).toEqual({ status: "ok", database: "up", redis: "up" });
      server.kill("SIGTERM");
      await server.exited;
      expect(server.stdout() + server.stderr()).not.toContain(REDIS_PASSWORD);
    }, 60_000);

    test("without the CA the router does not start on an untrusted database, says why, and shows no password", async () => {
      const proc = Bun.spawn([bin, "serve", "--port", "0", "--data", "tls-untrusted"], { cwd: dir, env: { PATH: "/usr/bin:/bin", HOME: dir, ...env }, stdout: "pipe", stderr: "pipe" });
      const exit = await Promise.race([proc.exited, Bun.sleep(30_000).then(() => "timeout" as const)]);
      if (exit === "timeout") proc.kill("SIGKILL");
      expect(exit).not.toBe("timeout");
      expect(exit).not.toBe(0);
      const output = (await new Response(proc.stdout).text()) + (await new Response(proc.stderr).text());
      expect(output).not.toContain(REDIS_PASSWORD);
      expect(output).toContain("PostgreSQL at");
      expect(output).toMatch(/certificate/);
      expect(output).toContain("--upstream-ca-file");
    }, 60_000);
  });
}
