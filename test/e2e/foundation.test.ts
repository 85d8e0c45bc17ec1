import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { startRouter, waitFor, type TestRouter } from "../helpers/router.ts";

let router: TestRouter;

beforeAll(async () => {
  router = await startRouter();
});
afterAll(() => router.stop());

describe("health and identity", () => {
  test("GET /healthz needs no key", async () => {
    const res = await router.fetch("/healthz", { key: null });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok", database: "embedded", redis: "embedded" });
  });

  test("the first owner is written to initial-owner-key with mode 0600 and works", async () => {
    const file = join(router.dataDir, "initial-owner-key");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const res = await router.fetch("/dashboard/status");
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toMatchObject({ id: 1, email: "owner@localhost", isOwner: true, level: 1, manage: true, balance: 0 });
    expect(JSON.stringify(body)).not.toContain(router.ownerKey);
  });

  test("GET /dashboard/info reports the stored configuration and limits, never the key", async () => {
    const res = await router.fetch("/dashboard/info");
    const body = await res.json();
    expect(body).toMatchObject({ ID: 1, Email: "owner@localhost", IsOwner: true, Level: 1, Rates: 1, RPM: null, HardLimit: null });
    expect(body.KeyPrefix).toBe(router.ownerKey.slice(0, 10));
    expect(JSON.stringify(body)).not.toContain(router.ownerKey);
    expect(JSON.stringify(body)).not.toMatch(/[0-9a-f]{64}/);
  });
});

describe("authentication", () => {
  test("missing and unknown keys are 401 in the OpenAI envelope", async () => {
    const missing = await router.fetch("/dashboard/status", { key: null });
    expect(missing.status).toBe(401);
    expect(await missing.json()).toEqual({
      error: { message: expect.stringContaining("Missing API key"), type: "authentication_error", param: null, code: "missing_api_key" },
    });
    const unknown = await router.fetch("/dashboard/status", { key: "sk-rt-unknownunknownunknown" });
    expect(unknown.status).toBe(401);
    expect((await unknown.json()).error.code).toBe("invalid_api_key");
  });

  test("a key in the URL is refused with a message that says to use a header, and is not logged", async () => {
    const res = await router.fetch(`/dashboard/status?key=${router.ownerKey}`, { key: null });
    expect(res.status).toBe(401);
    expect((await res.json()).error.message).toMatch(/header/);
    expect(router.logs.join("\n")).not.toContain(router.ownerKey);
  });

  test("the key parameters are refused in any letter case, with a valid key in the header too (object routes forward the query upstream)", async () => {
    for (const name of ["Key", "API_KEY", "Api-Key", "ACCESS_TOKEN", "token"]) {
      const res = await router.fetch(`/v1/files/file-1/content?${name}=${router.ownerKey}`);
      expect([name, res.status]).toEqual([name, 401]);
      expect((await res.json()).error.code).toBe("key_in_url");
    }
  });
});

describe("error envelopes", () => {
  test("an unknown path is 404 in the envelope of its family", async () => {
    const openai = await router.fetch("/v1/nothing-here");
    expect(openai.status).toBe(404);
    expect((await openai.json()).error.type).toBe("not_found_error");

    const anthropic = await router.fetch("/v1/messages/nothing", { method: "POST" });
    expect(anthropic.status).toBe(404);
    expect(await anthropic.json()).toEqual({ type: "error", error: { type: "not_found_error", message: expect.any(String) } });

    const gemini = await router.fetch("/v1beta/models/gemini-x:unknownMethod", { method: "POST" });
    expect(gemini.status).toBe(404);
    expect(await gemini.json()).toEqual({ error: { code: 404, message: expect.any(String), status: "NOT_FOUND" } });
  });
});

describe("request ids and logs", () => {
  test("every response carries a distinct X-Request-Id, errors included", async () => {
    const ids = new Set<string>();
    for (const path of ["/healthz", "/dashboard/status", "/nope"]) {
      const res = await router.fetch(path, { key: path === "/nope" ? null : undefined });
      const id = res.headers.get("x-request-id");
      expect(id).toMatch(/^req_[0-9a-f]{32}$/);
      ids.add(id!);
    }
    expect(ids.size).toBe(3);
  });

  test("one log line per request with method, path, status, duration, account and request id", async () => {
    const res = await router.fetch("/dashboard/info?x=1");
    const id = res.headers.get("x-request-id")!;
    // The line is formatted right after the answer is handed over, which the client may see first.
    const line = await waitFor(() => router.logs.find((l) => l.includes(`req=${id}`)), 2000, "the request's log line");
    expect(line).toMatch(/msg=request method=GET path=\/dashboard\/info status=200 ms=[\d.]+ account=1 req=/);
  });

  test("neither the database files nor any log line contain the owner key", async () => {
    for (const name of readdirSync(router.dataDir)) {
      if (name === "initial-owner-key") continue;
      expect(readFileSync(join(router.dataDir, name)).includes(Buffer.from(router.ownerKey))).toBe(false);
    }
    expect(router.logs.join("\n")).not.toContain(router.ownerKey);
  });
});

describe("serving HTTPS", () => {
  test("--tls-cert and --tls-key serve HTTPS (the listen URL says https)", async () => {
    const certs = (await import("../helpers/tls.ts")).testCertificates();
    const secure = await startRouter({ config: { tlsCert: certs.certFile, tlsKey: certs.keyFile } });
    try {
      expect(secure.url.startsWith("https://127.0.0.1:")).toBe(true);
      const res = await fetch(`${secure.url}/healthz`, { tls: { ca: certs.caPem } } as RequestInit);
      expect(await res.json()).toEqual({ status: "ok", database: "embedded", redis: "embedded" });
    } finally {
      await secure.stop();
    }
  });
});
