import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer } from "node:net";
import { addKey } from "../helpers/keys.ts";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { createAccount } from "../helpers/owner-ops.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";

// Issue 17: POST /x-keys/{id}/test answers {ok, status, message} in words an owner can act on.
let router: TestRouter;
let upstream: MockUpstream;
beforeAll(async () => {
  router = await startRouter();
  upstream = startMockUpstream();
});
afterAll(async () => {
  await upstream?.stop();
  await router?.stop();
});

const testOf = async (r: TestRouter, id: number) => {
  const res = await r.fetch(`/x-keys/${id}/test`, { method: "POST" });
  return { status: res.status, body: (await res.json()) as { ok: boolean; status: number | null; message: string } };
};

/** A port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("POST /x-keys/{id}/test", () => {
  test("a working key: its upstream's model list answers, with the key's secret sent only there", async () => {
    upstream.route("GET", "/v1/models", () => json({ object: "list", data: [{ id: "m1" }] }));
    const key = await addKey(router, { provider: `${upstream.url}/v1` });
    const { status, body } = await testOf(router, key.id);
    expect(status).toBe(200);
    expect(body).toMatchObject({ ok: true, status: 200 });
    expect(body.message).toContain("accepted the key");
    const seen = upstream.requests.filter((r) => r.path === "/v1/models");
    expect(seen.at(-1)?.headers.get("authorization")).toBe(`Bearer ${key.secret}`);
    expect(JSON.stringify(body)).not.toContain(key.secret);
    const logs = (await (await router.fetch("/dashboard/logs?action=key.test")).json()) as { logs: Array<{ details: Record<string, unknown> }> };
    expect(logs.logs[0]?.details).toMatchObject({ key: key.id, ok: true, status: 200 });
  });

  test("a key the upstream refuses: 401 in words, never the secret", async () => {
    const refusing = startMockUpstream();
    refusing.route("GET", "/v1/models", () => json({ error: { message: "bad key" } }, 401));
    try {
      const key = await addKey(router, { provider: `${refusing.url}/v1` });
      const { body } = await testOf(router, key.id);
      expect(body).toMatchObject({ ok: false, status: 401 });
      expect(body.message).toMatch(/refused the key \(401\)/);
      expect(body.message).not.toContain(key.secret);
    } finally {
      await refusing.stop();
    }
  });

  test("nothing listening: a refused connection, no status", async () => {
    const key = await addKey(router, { provider: `https://127.0.0.1:${await closedPort()}/v1` });
    const { body } = await testOf(router, key.id);
    expect(body).toMatchObject({ ok: false, status: null });
    expect(body.message).toContain("refused the connection");
  });

  test("an upstream whose CA the router does not trust: the message names --upstream-ca-file", async () => {
    const untrusting = await startRouter({ config: { upstreamCaFile: undefined } });
    try {
      const key = await addKey(untrusting, { provider: `${upstream.url}/v1` });
      const { body } = await testOf(untrusting, key.id);
      expect(body).toMatchObject({ ok: false, status: null });
      expect(body.message).toContain("not trusted");
      expect(body.message).toContain("--upstream-ca-file");
    } finally {
      await untrusting.stop();
    }
  });

  test("an unknown key is 404; a non-owner is refused", async () => {
    expect((await testOf(router, 999_999)).status).toBe(404);
    const account = await createAccount(router);
    const res = await fetch(`${router.url}/x-keys/1/test`, { method: "POST", headers: { authorization: `Bearer ${account.key}` } });
    expect(res.status).toBe(403);
  });
});
