import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hashApiKey } from "../../src/accounts/api-keys.ts";
import { createPrincipalCache } from "../../src/accounts/principal.ts";
import { createAuthenticator } from "../../src/http/auth.ts";
import { createManualClock } from "../../src/core/clock.ts";
import type { HttpError } from "../../src/core/errors.ts";
import { createLogger } from "../../src/core/log.ts";
import { createIdempotency } from "../../src/http/idempotency.ts";
import { openSqliteStore } from "../../src/store/sqlite/store.ts";
import { createSealer } from "../../src/store/crypto.ts";
import type { AccountRow } from "../../src/store/store.ts";

/** The Idempotency-Key handling around a management write (http/idempotency.ts), with a route the test controls. */

const dir = mkdtempSync(join(tmpdir(), "router-idempotency-"));
const store = openSqliteStore(join(dir, "router.db"));
afterAll(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});
const account = { id: 7, path: "/1/7/", isOwner: false, allowModels: null, allowIps: null, resources: null } as unknown as AccountRow;
const principals = createPrincipalCache(async (hash) => (hash === hashApiKey("sk-caller") ? account : undefined));
const logs: string[] = [];
const handle = createIdempotency({
  store,
  auth: createAuthenticator(principals),
  clock: createManualClock(Date.UTC(2026, 10, 27)),
  log: createLogger("info", (line) => logs.push(line)),
  sealer: createSealer(new Uint8Array(32).fill(7)),
  config: { maxBody: 64 * 1024 },
  refuse: (error: HttpError) => Response.json({ error: { code: error.code, message: error.message } }, { status: error.status }),
});
const request = (key: string, body = '{"CreditGranted":1}') =>
  new Request("http://router.test/x-users/9", { method: "PUT", headers: { authorization: "Bearer sk-caller", "idempotency-key": key }, body });

test("a retry while the first request still runs is 409; once it answered, the retry gets that answer", async () => {
  let finish!: (response: Response) => void;
  let runs = 0;
  const slow = () => {
    runs++;
    return new Promise<Response>((resolve) => (finish = resolve));
  };
  const first = handle(request("slow-1"), "/x-users/9", slow);
  // The first request holds the key once its route runs.
  while (runs === 0) await Bun.sleep(1);
  const during = await handle(request("slow-1"), "/x-users/9", slow);
  expect(during.status).toBe(409);
  expect(((await during.json()) as { error: { code: string } }).error.code).toBe("idempotency_key_in_use");
  finish(Response.json({ ID: 9, Balance: 1 }));
  expect((await first).status).toBe(200);
  const after = await handle(request("slow-1"), "/x-users/9", slow);
  expect(after.headers.get("idempotent-replayed")).toBe("true");
  expect(await after.json()).toEqual({ ID: 9, Balance: 1 });
  expect(runs).toBe(1);
});

test("a server-side failure or a 429 gives the key up: the retry runs the request again", async () => {
  let runs = 0;
  const flaky = async () => (++runs === 1 ? new Response("busy", { status: 503 }) : Response.json({ ok: true }));
  expect((await handle(request("flaky-1"), "/x-users/9", flaky)).status).toBe(503);
  const retry = await handle(request("flaky-1"), "/x-users/9", flaky);
  expect(retry.status).toBe(200);
  expect(retry.headers.get("idempotent-replayed")).toBeNull();
  let throws = true;
  const broken = async () => {
    if (throws) throw new Error("boom");
    return Response.json({ ok: true });
  };
  await expect(handle(request("thrown-1"), "/x-users/9", broken)).rejects.toThrow("boom");
  throws = false;
  expect((await handle(request("thrown-1"), "/x-users/9", broken)).status).toBe(200);
  expect(runs).toBe(2);
  // "Too many requests, try later" is not the request's answer either.
  let limited = true;
  const busy = async () => (limited ? Response.json({ error: { code: "rate_limit" } }, { status: 429 }) : Response.json({ ok: true }));
  expect((await handle(request("limited-1"), "/x-users/9", busy)).status).toBe(429);
  limited = false;
  const later = await handle(request("limited-1"), "/x-users/9", busy);
  expect(later.status).toBe(200);
  expect(later.headers.get("idempotent-replayed")).toBeNull();
});

test("reads, model calls and other paths pass through untouched, header or not", async () => {
  let runs = 0;
  const route = async () => {
    runs++;
    return Response.json({ ok: true });
  };
  const get = new Request("http://router.test/x-users/9", { headers: { authorization: "Bearer sk-caller", "idempotency-key": "read-1" } });
  const model = new Request("http://router.test/v1/files", { method: "POST", headers: { authorization: "Bearer sk-caller", "idempotency-key": "model-1" }, body: "{}" });
  for (let i = 0; i < 2; i++) {
    await handle(get, "/x-users/9", route);
    await handle(model.clone(), "/v1/files", route);
  }
  expect(runs).toBe(4);
});

test("a claim stored before fingerprints were keyed (a plain SHA-256, kept a day) still replays its retry, and still refuses another body", async () => {
  const plain = (body: string) => new Bun.CryptoHasher("sha256").update(`PUT /x-users/9\n${body}`).digest("hex");
  const sealer = createSealer(new Uint8Array(32).fill(7));
  const now = Date.UTC(2026, 10, 27);
  // As the router before the upgrade left it: claimed with the unkeyed fingerprint, answered.
  expect(await store.idempotency.claim({ accountId: 7, key: "before-upgrade", fingerprint: plain('{"CreditGranted":1}'), createdAt: now - 60_000 }, now - 86_400_000)).toBeUndefined();
  await store.idempotency.complete(7, "before-upgrade", { status: 200, contentType: "application/json", body: sealer.seal('{"ID":9}'), secret: false });
  let runs = 0;
  const route = async () => (runs++, Response.json({ ID: 9, again: true }));
  const retry = await handle(request("before-upgrade"), "/x-users/9", route);
  expect(retry.headers.get("idempotent-replayed")).toBe("true");
  expect(await retry.json()).toEqual({ ID: 9 });
  const other = await handle(request("before-upgrade", '{"CreditGranted":2}'), "/x-users/9", route);
  expect(other.status).toBe(422);
  expect(runs).toBe(0);
});

test("new claims store a fingerprint keyed with the sealing key: not the plain SHA-256, and another deployment's key gives another", async () => {
  const body = '{"CreditGranted":3}';
  expect((await handle(request("keyed-1", body), "/x-users/9", async () => Response.json({ ok: true }))).status).toBe(200);
  const now = Date.UTC(2026, 10, 27);
  const held = await store.idempotency.claim({ accountId: 7, key: "keyed-1", fingerprint: "probe", createdAt: now }, now - 86_400_000);
  expect(held?.fingerprint).toMatch(/^[0-9a-f]{64}$/);
  expect(held?.fingerprint).not.toBe(new Bun.CryptoHasher("sha256").update(`PUT /x-users/9\n${body}`).digest("hex"));
  const keyed = (seed: number) => new Bun.CryptoHasher("sha256", createSealer(new Uint8Array(32).fill(seed)).derivedKey("idempotency-fingerprint")).update(`PUT /x-users/9\n${body}`).digest("hex");
  expect(held?.fingerprint).toBe(keyed(7));
  expect(keyed(8)).not.toBe(keyed(7));
});

test("a claim made under the deployment's previous secret key: its retry is told the answer can no longer be read, not that the request differs", async () => {
  const body = '{"CreditGranted":4}';
  const previous = createSealer(new Uint8Array(32).fill(9));
  const now = Date.UTC(2026, 10, 27);
  const fingerprint = new Bun.CryptoHasher("sha256", previous.derivedKey("idempotency-fingerprint")).update(`PUT /x-users/9\n${body}`).digest("hex");
  await store.idempotency.claim({ accountId: 7, key: "old-secret-key", fingerprint, createdAt: now - 60_000 }, now - 86_400_000);
  await store.idempotency.complete(7, "old-secret-key", { status: 200, contentType: "application/json", body: previous.seal('{"ID":9}'), secret: false });
  let runs = 0;
  const retry = await handle(request("old-secret-key", body), "/x-users/9", async () => (runs++, Response.json({ ok: true })));
  expect(retry.status).toBe(409);
  expect(((await retry.json()) as { error: { code: string } }).error.code).toBe("idempotency_answer_not_kept");
  expect(runs).toBe(0);
});
