import { describe, expect, test } from "bun:test";
import { connect as tcpConnect } from "node:net";
import { toFile } from "openai";
import { startFakeOpenAI, type FakeOpenAI } from "../helpers/fake-openai.ts";
import { addKey } from "../helpers/keys.ts";
import { api, createAccount, DEFAULT_RESOURCES, MANAGER_RESOURCES } from "../helpers/owner-ops.ts";
import { noiseBytes } from "../helpers/raw-upstream.ts";
import type { TestRouter } from "../helpers/router.ts";
import { perTest } from "../helpers/scoped.ts";
import { openaiClient } from "../helpers/sdk.ts";
import { chatCompletion } from "../helpers/mock-upstream.ts";

/**
 * Review of upstream objects (files, responses, threads, runs, video jobs, realtime
 * client secrets) and their resource affinity, black-box over HTTP against local HTTPS
 * fakes of OpenAI, from a review: the first group failed before its fixes (files named
 * in a body, AllowModels on a thread's run, ids two upstreams number alike); the second
 * holds what the review checked and found right.
 */

const scope = perTest();

/** A fake OpenAI that lives for the current test; it also answers chat completions. */
function fake(name: string): FakeOpenAI {
  const upstream = startFakeOpenAI(name);
  upstream.route("POST", "/v1/chat/completions", (req) => chatCompletion(req.json?.model, undefined, { id: `chatcmpl-${name}` }));
  scope.later(() => upstream.stop());
  return upstream;
}

/** A router (every model priced at zero) with one provider key per fake on Level 1. */
async function routerWith(fakes: FakeOpenAI[]): Promise<{ router: TestRouter; keyIds: number[] }> {
  const router = await scope.router();
  const keyIds: number[] = [];
  for (const f of fakes) keyIds.push((await addKey(router, { provider: `${f.url}/v1` })).id);
  return { router, keyIds };
}

const upload = async (router: TestRouter, key: string, name = "secret.pdf") =>
  openaiClient(router.url, key).files.create({ file: await toFile(noiseBytes(500, 7), name), purpose: "user_data" });

const sleepKey = (router: TestRouter, id: number, asleep: boolean) => router.fetch(`/x-keys/${id}/${asleep ? "sleep" : "wake"}`, { method: "POST" });

describe("what the review found, fixed", () => {
  // docs/api.md, "Resource affinity": "every object created through the router (file, …) is
  // recorded with the account that created it and the provider key that served it … Calls on
  // the object … go only to that key; no other key is ever tried … Another account, or an id
  // the router never created, gets the same 404 `object_not_found`."
  // spec 4.2/5.4 and docs/api.md "Access checks on every request": an account reaches only
  // what it may. Only ids in the *path* of the object routes are checked (object-routes.ts,
  // `owned`), and `previous_response_id` in a Responses body (pipeline.ts, `continuation`);
  // a file named by id inside a model call's body (Responses `input_file.file_id`, a Chat
  // Completions `file` part) is forwarded unchecked to whatever key the Level picks. With
  // one key holding Alice's file, Bob's model call makes the provider read Alice's file for
  // Bob: a cross-account read of a private upload.
  test("a model call naming another account's file_id in its body is refused with 404 object_not_found and never forwarded", async () => {
    const upstream = fake("m0");
    const { router } = await routerWith([upstream]);
    const alice = await createAccount(router, { CreditGranted: 5 });
    const bob = await createAccount(router, { CreditGranted: 5 });
    const file = await upload(router, alice.key);
    expect(upstream.files.has(file.id)).toBe(true);

    // Bob cannot reach the file on the file routes (sanity: the path check works).
    expect((await api(router, `/v1/files/${file.id}`, { key: bob.key })).status).toBe(404);

    upstream.clear();
    const viaResponses = await api(router, "/v1/responses", {
      key: bob.key,
      body: { model: "gpt-x", input: [{ role: "user", content: [{ type: "input_file", file_id: file.id }, { type: "input_text", text: "Summarise this file" }] }] },
    });
    const viaChat = await api(router, "/v1/chat/completions", {
      key: bob.key,
      body: { model: "gpt-x", messages: [{ role: "user", content: [{ type: "file", file: { file_id: file.id } }, { type: "text", text: "Summarise this file" }] }] },
    });
    // Assistants: Bob attaches Alice's file to a message on his own thread (held by the same key).
    const bobsThread = await api(router, "/v1/threads", { key: bob.key, body: {} });
    expect(bobsThread.status).toBe(200);
    const viaThread = await api(router, `/v1/threads/${bobsThread.body.id}/messages`, {
      key: bob.key,
      body: { role: "user", content: "Summarise the attachment", attachments: [{ file_id: file.id, tools: [{ type: "file_search" }] }] },
    });
    const forwardedWithAlicesFile = upstream.requests.filter((r) => r.text.includes(file.id)).map((r) => `${r.method} ${r.path}`);
    expect({
      responses: [viaResponses.status, viaResponses.body?.error?.code],
      chat: [viaChat.status, viaChat.body?.error?.code],
      thread: [viaThread.status, viaThread.body?.error?.code],
      forwardedWithAlicesFile,
    }).toEqual({ responses: [404, "object_not_found"], chat: [404, "object_not_found"], thread: [404, "object_not_found"], forwardedWithAlicesFile: [] });
  });

  // docs/api.md, "Resource affinity": "Calls on the object … go only to that key; no other key
  // is ever tried". A file is held by one provider key; a model call that names it must go
  // to that key (as a Responses call continuing `previous_response_id` does), or the provider
  // answers "no such file". The body's file_id is not read, so the call goes round-robin.
  test("the creator's own model call naming its file_id goes only to the key holding the file", async () => {
    const fakes = [fake("m0"), fake("m1"), fake("m2")];
    const { router, keyIds } = await routerWith(fakes);
    const alice = await createAccount(router, { CreditGranted: 5 });
    // The file lands on m1: the other keys sleep meanwhile.
    for (const i of [0, 2]) expect((await sleepKey(router, keyIds[i]!, true)).status).toBe(200);
    const file = await upload(router, alice.key);
    for (const i of [0, 2]) expect((await sleepKey(router, keyIds[i]!, false)).status).toBe(200);
    expect(fakes[1]!.files.has(file.id)).toBe(true);

    for (const f of fakes) f.clear();
    for (let i = 0; i < 3; i++) {
      const res = await api(router, "/v1/responses", {
        key: alice.key,
        body: { model: "gpt-x", input: [{ role: "user", content: [{ type: "input_file", file_id: file.id }, { type: "input_text", text: `turn ${i}` }] }] },
      });
      expect(res.status).toBe(200);
    }
    const reachedBy = fakes.map((f) => [f.name, f.saw(/^POST \/v1\/responses$/).length]);
    expect(reachedBy).toEqual([
      ["m0", 0],
      ["m1", 3],
      ["m2", 0],
    ]);
  });

  // docs/api.md, "Access checks on every request": "on model calls the requested model against
  // `AllowModels` (403 `model_not_allowed`)". A run is a model call (it "spends model tokens
  // upstream", object-routes.ts), and the router does check the `model` of a run made with
  // POST /v1/threads/runs (create-and-run). A run on an existing thread,
  // POST /v1/threads/{id}/runs, goes through `onObject` with `requestedModel: undefined`
  // (object-routes.ts), so its `model` override is never checked: an account restricted to
  // one model runs any other model through the Assistants API.
  test("AllowModels: a run on a thread (POST /v1/threads/{id}/runs) naming a model the account may not use is 403, as create-and-run is", async () => {
    const upstream = fake("m0");
    const { router } = await routerWith([upstream]);
    const restricted = await createAccount(router, { CreditGranted: 5, AllowModels: "gpt-4o-mini" });
    const thread = await api(router, "/v1/threads", { key: restricted.key, body: {} });
    expect(thread.status).toBe(200);

    // The reference: the same model on create-and-run is refused before anything is sent.
    upstream.clear();
    const createAndRun = await api(router, "/v1/threads/runs", { key: restricted.key, body: { assistant_id: "asst_1", model: "o1-pro" } });
    expect([createAndRun.status, createAndRun.body?.error?.code, upstream.requests.length]).toEqual([403, "model_not_allowed", 0]);

    const run = await api(router, `/v1/threads/${thread.body.id}/runs`, { key: restricted.key, body: { assistant_id: "asst_1", model: "o1-pro" } });
    expect({ status: run.status, code: run.body?.error?.code, forwarded: upstream.saw(/\/runs$/).length }).toEqual({
      status: 403,
      code: "model_not_allowed",
      forwarded: 0,
    });
  });

  // docs/api.md, "Resource affinity": "every object created through the router … is recorded
  // with the account that created it and the provider key that served it … Another account …
  // gets the same 404". Bindings are keyed by the upstream id alone and stored with an upsert
  // (store/sqlite/small-stores.ts `onConflictDoUpdate`, affinity.ts `remember`): when a second
  // upstream hands out an id already bound (two OpenAI-compatible servers numbering their
  // objects alike; in the BYOK style, another tenant's key pointing at an upstream of its
  // choosing), the later creation silently takes the id over. The first creator loses its
  // object (404 on its own file) and the id now routes to the other account's key.
  test("an upstream id already bound to one account keeps its owner when another account later gets the same id", async () => {
    // Two upstreams that number their objects alike: both hand out file-dup-1 first.
    const first = fake("dup");
    const second = fake("dup");
    const { router, keyIds } = await routerWith([first, second]);
    const alice = await createAccount(router, { CreditGranted: 5 });
    const bob = await createAccount(router, { CreditGranted: 5 });

    expect((await sleepKey(router, keyIds[1]!, true)).status).toBe(200);
    const alices = await upload(router, alice.key, "alice.pdf");
    expect((await sleepKey(router, keyIds[1]!, false)).status).toBe(200);
    expect((await sleepKey(router, keyIds[0]!, true)).status).toBe(200);
    const bobs = await upload(router, bob.key, "bob.pdf");
    expect((await sleepKey(router, keyIds[0]!, false)).status).toBe(200);
    expect(alices.id).toBe(bobs.id);

    // Alice still reaches her own file, on the key that holds it.
    first.clear();
    second.clear();
    const mine = await api(router, `/v1/files/${alices.id}`, { key: alice.key });
    expect({ status: mine.status, filename: mine.body?.filename, first: first.requests.length, second: second.requests.length }).toEqual({
      status: 200,
      filename: "alice.pdf",
      first: 1,
      second: 0,
    });
  });
});

describe("what the review checked and found right", () => {
  // docs/api.md, model endpoints and "Not metered": batches, vector stores, uploads,
  // conversations, assistants, the `POST /v1/videos` form, video content and the beta
  // realtime session/call routes are not routed: nothing billable or object-creating
  // reaches a provider key through them (404 before any upstream call).
  test("object families the router does not route (batches, vector stores, uploads, …) are 404 and never forwarded", async () => {
    const upstream = fake("m0");
    const { router } = await routerWith([upstream]);
    const account = await createAccount(router, { CreditGranted: 5 });
    const calls: Array<[string, string]> = [
      ["POST", "/v1/batches"],
      ["GET", "/v1/batches/batch_1"],
      ["POST", "/v1/vector_stores"],
      ["POST", "/v1/uploads"],
      ["POST", "/v1/conversations"],
      ["POST", "/v1/assistants"],
      ["POST", "/v1/videos"],
      ["GET", "/v1/videos/vidreq_m0_1/content"],
      ["POST", "/v1/realtime/sessions"],
      ["POST", "/v1/realtime/calls"],
    ];
    const statuses: Array<[string, number]> = [];
    for (const [method, path] of calls) {
      const res = await api(router, path, { key: account.key, method, body: method === "POST" ? {} : undefined });
      statuses.push([`${method} ${path}`, res.status]);
    }
    expect(statuses).toEqual(calls.map(([method, path]) => [`${method} ${path}`, 404]));
    expect(upstream.requests).toHaveLength(0);
  });

  // docs/api.md, "Resource affinity": "Another account … gets the same 404": even the account's
  // manager and the owner, who may manage the creator, do not reach its objects.
  test("the creator's manager and the owner get 404 on its file, response and thread; nothing is forwarded", async () => {
    const upstream = fake("m0");
    const { router } = await routerWith([upstream]);
    const manager = await createAccount(router, { CreditGranted: 5, Resources: MANAGER_RESOURCES });
    const child = await createAccount(router, { CreditGranted: 1, Resources: DEFAULT_RESOURCES }, manager.key);
    const file = await upload(router, child.key);
    const response = await api(router, "/v1/responses", { key: child.key, body: { model: "gpt-x", input: "hi" } });
    const thread = await api(router, "/v1/threads", { key: child.key, body: {} });
    upstream.clear();
    const statuses: number[] = [];
    for (const key of [manager.key, router.ownerKey]) {
      statuses.push((await api(router, `/v1/files/${file.id}/content`, { key })).status);
      statuses.push((await api(router, `/v1/responses/${response.body.id}/input_items`, { key })).status);
      statuses.push((await api(router, `/v1/threads/${thread.body.id}/messages`, { key, body: { role: "user", content: "x" } })).status);
      statuses.push((await api(router, `/v1/files/${file.id}`, { key, method: "DELETE" })).status);
    }
    expect(statuses).toEqual(Array(8).fill(404));
    expect(upstream.requests).toHaveLength(0);
    // GET /v1/files lists only the caller's own files: the manager has none, so no upstream call.
    const listed = await api(router, "/v1/files", { key: manager.key });
    expect(listed.body).toEqual({ object: "list", data: [], has_more: false });
    expect(upstream.requests).toHaveLength(0);
  });

  // A path that climbs out of the caller's own thread (`%2E%2E` segments) into another
  // account's file: Bun normalises the path before routing, so the file route and its check
  // see /v1/files/{id} and answer 404.
  test("dot-segment paths from one's own thread to another account's file are normalised and checked: 404", async () => {
    const upstream = fake("m0");
    const { router } = await routerWith([upstream]);
    const alice = await createAccount(router, { CreditGranted: 5 });
    const bob = await createAccount(router, { CreditGranted: 5 });
    const file = await upload(router, alice.key);
    const thread = await api(router, "/v1/threads", { key: bob.key, body: {} });
    upstream.clear();
    const port = new URL(router.url).port;
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = tcpConnect(Number(port), "127.0.0.1", () =>
        socket.write(`GET /v1/threads/${thread.body.id}/%2E%2E/%2E%2E/files/${file.id}/content HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${bob.key}\r\nConnection: close\r\n\r\n`),
      );
      let out = "";
      socket.on("data", (d) => (out += d));
      socket.on("end", () => resolve(out));
      socket.on("error", reject);
    });
    expect(raw.split("\r\n")[0]).toContain(" 404 ");
    expect(upstream.requests).toHaveLength(0);
  });
});
