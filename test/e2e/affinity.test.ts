import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { toFile } from "openai";
import { startFakeOpenAI, type FakeOpenAI } from "../helpers/fake-openai.ts";
import { addKey } from "../helpers/keys.ts";
import { createAccount } from "../helpers/owner-ops.ts";
import { noiseBytes } from "../helpers/raw-upstream.ts";
import { startRouter, tempDir, type TestRouter } from "../helpers/router.ts";
import { openaiClient } from "../helpers/sdk.ts";

/**
 * Issue 7, resource affinity: an object created through the router (file, response,
 * thread, run, video job) is bound to the account that created it and the provider
 * key that served it. Every later call on it goes to that key, whatever the
 * round-robin would pick; another account gets the 404 an unknown id gets; the
 * binding survives a restart; a deleted or disabled key makes its objects answer 503
 * and no other key is ever tried.
 */

let fakes: FakeOpenAI[];
beforeAll(() => {
  fakes = ["m0", "m1", "m2"].map(startFakeOpenAI);
});
afterAll(async () => {
  for (const fake of fakes) await fake.stop();
});

const routers: TestRouter[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const router of routers.splice(0)) await router.stop();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  for (const fake of fakes) fake.clear();
});

interface Setup {
  router: TestRouter;
  /** Provider key id per fake name. */
  keyOf: Record<string, number>;
  alice: ReturnType<typeof openaiClient>;
  bob: ReturnType<typeof openaiClient>;
  aliceKey: string;
  bobKey: string;
}

/** Every model free, videos included (the router refuses unpriced models). */
const PRICING = { ChatPricing: { "*": { InputText: 0, OutputText: 0 } }, VideoPricing: { "*": { PerSecond: 0 } } };

/** A router with one key per fake on Level 1 and two ordinary accounts. */
async function setup(dataDir?: string): Promise<Setup> {
  const router = await startRouter({ dataDir });
  routers.push(router);
  // startRouter applies its pricing option only to a data dir it made itself.
  const priced = await router.fetch("/x-config", { method: "PUT", body: JSON.stringify({ PRICING }) });
  expect(priced.status).toBe(200);
  const keyOf: Record<string, number> = {};
  for (const fake of fakes) keyOf[fake.name] = (await addKey(router, { provider: `${fake.url}/v1` })).id;
  const alice = await createAccount(router);
  const bob = await createAccount(router);
  return { router, keyOf, alice: openaiClient(router.url, alice.key), bob: openaiClient(router.url, bob.key), aliceKey: alice.key, bobKey: bob.key };
}

const creatorOf = (id: string) => {
  const fake = fakes.find((f) => id.includes(`_${f.name}_`) || id.includes(`-${f.name}-`));
  if (!fake) throw new Error(`no fake created ${id}`);
  return fake;
};
const clearAll = () => {
  for (const fake of fakes) fake.clear();
};
/** Which fakes saw any request since the last clear. */
const seenBy = () => fakes.filter((f) => f.requests.length > 0).map((f) => f.name);

/** One object of each kind, created by `client`. */
async function createObjects(client: ReturnType<typeof openaiClient>) {
  const file = await client.files.create({ file: await toFile(noiseBytes(1000), "f.jsonl"), purpose: "batch" });
  const response = await client.responses.create({ model: "gpt-x", input: "hi" });
  const thread = await client.beta.threads.create();
  const run = await client.beta.threads.createAndRun({ assistant_id: "asst_1" });
  const video = await client.post<{ request_id: string }>("/videos/generations", { body: { model: "video-x", prompt: "p" } });
  return { file: file.id, response: response.id, thread: thread.id, run: run.id, runThread: run.thread_id, video: video.request_id };
}
type Objects = Awaited<ReturnType<typeof createObjects>>;

/** Every operation on the objects, each paired with the object it must be routed by. */
function operations(client: ReturnType<typeof openaiClient>, o: Objects): Array<[string, string, () => Promise<unknown>]> {
  return [
    ["retrieve file", o.file, () => client.files.retrieve(o.file)],
    ["file content", o.file, () => client.files.content(o.file).then((r) => r.arrayBuffer())],
    ["retrieve response", o.response, () => client.responses.retrieve(o.response)],
    ["response input_items", o.response, () => client.responses.inputItems.list(o.response)],
    ["cancel response", o.response, () => client.responses.cancel(o.response)],
    ["continue response", o.response, () => client.responses.create({ model: "gpt-x", input: "more", previous_response_id: o.response })],
    ["retrieve thread", o.thread, () => client.beta.threads.retrieve(o.thread)],
    ["add message", o.thread, () => client.beta.threads.messages.create(o.thread, { role: "user", content: "hi" })],
    ["create run", o.thread, () => client.beta.threads.runs.create(o.thread, { assistant_id: "asst_1" })],
    ["retrieve run", o.runThread, () => client.beta.threads.runs.retrieve(o.run, { thread_id: o.runThread })],
    ["poll video", o.video, () => client.videos.retrieve(o.video)],
  ];
}

/** Deleting each object (the last thing done to it). */
function deletions(client: ReturnType<typeof openaiClient>, o: Objects): Array<[string, string, () => Promise<unknown>]> {
  return [
    ["delete file", o.file, () => client.files.delete(o.file)],
    ["delete response", o.response, () => client.responses.delete(o.response)],
    ["delete thread", o.thread, () => client.beta.threads.delete(o.thread)],
  ];
}

describe("every call on an object goes to the key that created it", () => {
  test("three rounds of objects spread over three keys; each call reaches only its creator", async () => {
    const { alice } = await setup();
    const rounds = [await createObjects(alice), await createObjects(alice), await createObjects(alice)];
    // The round-robin spread the creations: each kind landed on more than one key.
    expect(new Set(rounds.map((o) => creatorOf(o.file).name)).size).toBeGreaterThan(1);
    expect(new Set(rounds.map((o) => creatorOf(o.response).name)).size).toBeGreaterThan(1);
    for (const objects of rounds) {
      for (const [what, id, call] of [...operations(alice, objects), ...deletions(alice, objects)]) {
        clearAll();
        await call();
        expect([what, seenBy()]).toEqual([what, [creatorOf(id).name]]);
      }
    }
  });
});

describe("another account", () => {
  test("gets the 404 of an unknown id for every call on someone else's object, and nothing is forwarded", async () => {
    const { alice, bob } = await setup();
    const objects = await createObjects(alice);
    const unknown: Objects = { file: "file-m0-999", response: "resp_m0_999", thread: "thread_m0_999", run: "run_m0_999", runThread: "thread_m0_998", video: "vidreq_m0_999" };
    const strangerCalls = [...operations(bob, objects), ...deletions(bob, objects)];
    const unknownCalls = [...operations(bob, unknown), ...deletions(bob, unknown)];
    clearAll();
    for (let i = 0; i < strangerCalls.length; i++) {
      const [what, id, call] = strangerCalls[i]!;
      const error = (await call().catch((e) => e)) as { status: number; error: { message: string } };
      const missing = (await unknownCalls[i]![2]().catch((e) => e)) as { status: number; error: { message: string } };
      expect([what, error.status]).toEqual([what, 404]);
      // Word for word the answer for an id that does not exist.
      expect([what, error.error]).toEqual([what, { ...missing.error, message: missing.error.message.replace(unknownCalls[i]![1], id) }]);
    }
    expect(seenBy()).toEqual([]);
    // Alice's objects are untouched: her calls still work.
    expect((await alice.files.retrieve(objects.file)).id).toBe(objects.file);
  });
});

describe("persistence", () => {
  test("affinity survives a restart on the same data directory", async () => {
    const dataDir = tempDir();
    dirs.push(dataDir);
    const first = await setup(dataDir);
    const objects = [await createObjects(first.alice), await createObjects(first.alice)];
    await first.router.stop();
    routers.splice(routers.indexOf(first.router), 1);

    // Same data dir: same keys, accounts and bindings; no new keys added.
    const router = await startRouter({ dataDir });
    routers.push(router);
    const alice = openaiClient(router.url, first.aliceKey);
    const bob = openaiClient(router.url, first.bobKey);
    for (const o of objects) {
      for (const [what, id, call] of operations(alice, o)) {
        clearAll();
        await call();
        expect([what, seenBy()]).toEqual([what, [creatorOf(id).name]]);
      }
    }
    clearAll();
    expect((await bob.files.retrieve(objects[0]!.file).catch((e) => e)).status).toBe(404);
    expect((await bob.videos.retrieve(objects[0]!.video).catch((e) => e)).status).toBe(404);
    expect(seenBy()).toEqual([]);
  });
});

describe("the bound key is gone", () => {
  async function expectUnavailable(s: Setup, objects: Objects) {
    clearAll();
    for (const [what, , call] of operations(s.alice, objects)) {
      const error = (await call().catch((e) => e)) as { status: number; error: Record<string, unknown> };
      expect([what, error.status, error.error?.code]).toEqual([what, 503, "object_key_unavailable"]);
      expect(error.error.type).toBe("overloaded_error");
    }
    // No other key was tried.
    expect(seenBy()).toEqual([]);
  }

  /** Objects all created on one key: the other keys are asleep meanwhile. */
  async function objectsOn(s: Setup, name: string): Promise<Objects> {
    for (const fake of fakes) if (fake.name !== name) await s.router.deps.pool.setManualSleep(s.keyOf[fake.name]!, true);
    const objects = await createObjects(s.alice);
    for (const fake of fakes) if (fake.name !== name) await s.router.deps.pool.setManualSleep(s.keyOf[fake.name]!, false);
    expect(creatorOf(objects.file).name).toBe(name);
    return objects;
  }

  test("deleted (DELETE /x-keys/{id}?force=true): its objects answer 503 object_key_unavailable; others still work", async () => {
    const s = await setup();
    const doomed = await objectsOn(s, "m1");
    const safe = await objectsOn(s, "m2");
    const res = await s.router.fetch(`/x-keys/${s.keyOf.m1}?force=true`, { method: "DELETE" });
    expect(res.status).toBe(200);
    await expectUnavailable(s, doomed);
    // The binding is not silently moved or dropped: still 503, not 404, even once a new
    // key (a new id: ids are never reused) serves the same upstream.
    await addKey(s.router, { provider: `${fakes[1]!.url}/v1` });
    clearAll();
    expect((await s.alice.files.retrieve(doomed.file).catch((e) => e)).status).toBe(503);
    expect(seenBy()).toEqual([]);
    // Objects on the other keys are unaffected.
    clearAll();
    expect((await s.alice.files.retrieve(safe.file)).id).toBe(safe.file);
    expect(seenBy()).toEqual(["m2"]);
    // A stranger still gets 404, not a hint that the object exists.
    expect((await s.bob.files.retrieve(doomed.file).catch((e) => e)).status).toBe(404);
  });

  test("disabled (PUT Status:false): 503 and no other key; enabled again, the objects are back", async () => {
    const s = await setup();
    const objects = await objectsOn(s, "m0");
    const off = await s.router.fetch(`/x-keys/${s.keyOf.m0}`, { method: "PUT", body: JSON.stringify({ Status: false }) });
    expect(off.status).toBe(200);
    await expectUnavailable(s, objects);
    const on = await s.router.fetch(`/x-keys/${s.keyOf.m0}`, { method: "PUT", body: JSON.stringify({ Status: true }) });
    expect(on.status).toBe(200);
    clearAll();
    expect((await s.alice.responses.retrieve(objects.response)).id).toBe(objects.response);
    expect(seenBy()).toEqual(["m0"]);
  });

  test("the bound key failing (500) is not replaced by another key: 502", async () => {
    const s = await setup();
    const objects = await objectsOn(s, "m2");
    clearAll();
    fakes[2]!.once(() => Response.json({ error: { message: "boom" } }, { status: 500 }));
    const error = await s.alice.files.retrieve(objects.file).catch((e) => e);
    expect(error.status).toBe(502);
    expect(seenBy()).toEqual(["m2"]);
    expect(fakes[2]!.requests).toHaveLength(1);
  });
});
