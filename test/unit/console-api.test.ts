import { afterEach, expect, test } from "bun:test";
import { ApiError, call } from "../../console/src/lib/api.ts";

/** The console's API helper: a write whose answer is lost is sent again under one Idempotency-Key; reads are not. */

const realFetch = globalThis.fetch;
afterEach(() => {
  globalThis.fetch = realFetch;
});

/** A fetch that answers from a script, recording the Idempotency-Key of each send. */
function scripted(steps: Array<"lost" | Response>) {
  const keys: Array<string | null> = [];
  globalThis.fetch = (async (_path: string, init: RequestInit) => {
    keys.push(new Headers(init.headers).get("idempotency-key"));
    const step = steps.shift();
    if (!step || step === "lost") throw new TypeError("Failed to fetch");
    return step;
  }) as typeof fetch;
  return keys;
}

test("a write whose answer is lost is sent again with the same key, and its answer returned", async () => {
  const keys = scripted(["lost", Response.json({ Balance: 7 })]);
  const { data } = await call<{ Balance: number }>("PUT", "/x-users/5", { body: { CreditGranted: 7 }, key: "sk-test" });
  expect(data).toEqual({ Balance: 7 });
  expect(keys).toHaveLength(2);
  expect(keys[0]).toMatch(/^[0-9a-f]{32}$/);
  expect(keys[1]).toBe(keys[0]!);
});

test("a key still held by the first send is asked again; each write gets a key of its own", async () => {
  const busy = () => Response.json({ error: { message: "not finished", code: "idempotency_key_in_use" } }, { status: 409 });
  const keys = scripted([busy(), Response.json({ ok: true }), Response.json({ ok: true })]);
  await call("POST", "/x-users/batch-credit", { body: {}, key: "sk-test" });
  await call("POST", "/x-users/batch-credit", { body: {}, key: "sk-test" });
  expect(keys[0]).toBe(keys[1]!);
  expect(keys[2]).not.toBe(keys[0]!);
});

test("a proxy's 502 or a router's 503 is sent again under the same key; the last answer stands", async () => {
  const keys = scripted([new Response("bad gateway", { status: 502 }), Response.json({ ok: true })]);
  expect((await call<{ ok: boolean }>("PUT", "/x-users/5", { body: {}, key: "sk-test" })).data).toEqual({ ok: true });
  expect(keys[1]).toBe(keys[0]!);
  const unavailable = () => Response.json({ error: { message: "PostgreSQL is unavailable", code: "database_unavailable" } }, { status: 503 });
  scripted([unavailable(), new Response("bad gateway", { status: 502 }), unavailable()]);
  const error = await call("POST", "/x-users/batch-credit", { body: {}, key: "sk-test" }).catch((e: ApiError) => e);
  expect((error as ApiError).status).toBe(503);
});

test("reads carry no key and are not sent again; a write lost three times is a network error", async () => {
  const keys = scripted(["lost"]);
  await expect(call("GET", "/x-users", { key: "sk-test" })).rejects.toBeInstanceOf(ApiError);
  expect(keys).toEqual([null]);
  const lostKeys = scripted(["lost", "lost", "lost"]);
  const error = await call("DELETE", "/x-news/3", { key: "sk-test" }).catch((e: ApiError) => e);
  expect((error as ApiError).status).toBe(0);
  expect(lostKeys).toHaveLength(3);
});
