import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { APIError, toFile } from "openai";
import { SPEECH_BYTES, startFakeOpenAI, TRANSCRIBED_SECONDS, type FakeOpenAI } from "../helpers/fake-openai.ts";
import { addKey, usageRows } from "../helpers/keys.ts";
import { noiseBytes, sameBytes } from "../helpers/raw-upstream.ts";
import { startRouter, waitFor, type TestRouter } from "../helpers/router.ts";
import { openaiClient } from "../helpers/sdk.ts";

/**
 * Issue 7: the rest of the OpenAI surface through the official SDK — images, audio,
 * moderations, files, threads, response resources and video jobs — against three
 * HTTPS upstreams (three provider keys on Level 1), billed and bound to the key that
 * created each object.
 */

const RATES = 1.5;
const PRICING = {
  ChatPricing: {
    "*": { InputText: 0, OutputText: 0 },
    // gpt-image-1 style: priced by tokens, no ImgPricing entry.
    "acme-image-tokens": { InputText: 5, InputImage: 10, OutputText: 40 },
  },
  ImgPricing: { "acme-img": { Call: 0.05, Sizes: { "1024x1792": 0.09, "256x256": 0.01 } } },
  AudioPricing: { "acme-whisper": { PerMinute: 0.006 }, "acme-tts": { PerMinute: 0.015 } },
  VideoPricing: { "acme-video": { PerSecond: 0.1 } },
};
/** Nano-credits for a USD amount at the account's Rates. */
const nanos = (usd: number) => Math.round(usd * 1e9 * RATES);

let router: TestRouter;
let fakes: FakeOpenAI[];
let account: { id: number; key: string };
let client: ReturnType<typeof openaiClient>;
let ownerClient: ReturnType<typeof openaiClient>;

beforeAll(async () => {
  fakes = ["m0", "m1", "m2"].map(startFakeOpenAI);
  router = await startRouter({ pricing: PRICING });
  for (const fake of fakes) await addKey(router, { provider: `${fake.url}/v1` });
  const res = await router.fetch("/x-users", { method: "POST", body: JSON.stringify({ Email: "surface@example.com", CreditGranted: 100, Rates: RATES }) });
  expect(res.status).toBe(201);
  const body = await res.json();
  account = { id: body.ID, key: body.APIKey };
  client = openaiClient(router.url, account.key);
  ownerClient = openaiClient(router.url, router.ownerKey);
});
afterAll(async () => {
  await router.stop();
  for (const fake of fakes) await fake.stop();
});
beforeEach(() => {
  for (const fake of fakes) fake.clear();
});

/** The usage row of one call, by the request id the router answered with. */
const rowOf = async (requestId: string | null | undefined): Promise<Record<string, any>> =>
  (await waitFor(async () => (await usageRows(router)).find((row) => row.request_id === requestId), 3000, `usage row ${requestId}`))!;

/** The fake whose name an object id carries: the upstream (provider key) that created it. */
const creatorOf = (id: string) => {
  const fake = fakes.find((f) => id.includes(`_${f.name}_`) || id.includes(`-${f.name}-`));
  if (!fake) throw new Error(`no fake created ${id}`);
  return fake;
};

/** Asserts that calls matching `pattern` reached `fake` (`count` of them) and no other upstream. */
function onlyOn(fake: FakeOpenAI, pattern: RegExp, count = 1) {
  expect(fakes.map((f) => [f.name, f.saw(pattern).length])).toEqual(fakes.map((f) => [f.name, f === fake ? count : 0]));
}
const nobodySaw = (pattern: RegExp) => expect(fakes.flatMap((f) => f.saw(pattern))).toHaveLength(0);
const saw = (pattern: RegExp) => fakes.flatMap((f) => f.saw(pattern));

describe("images", () => {
  test("generation (JSON) is charged per image at its size's ImgPricing × Rates; the body goes upstream untouched", async () => {
    const { data, response } = await client.images.generate({ model: "acme-img", prompt: "a cat", n: 2, size: "1024x1792" }).withResponse();
    expect(data.data).toHaveLength(2);
    const [seen] = saw(/^POST \/v1\/images\/generations$/);
    expect(seen!.text).toBe(JSON.stringify({ model: "acme-img", prompt: "a cat", n: 2, size: "1024x1792" }));
    const row = await rowOf(response.headers.get("x-request-id"));
    expect(row).toMatchObject({ account_id: account.id, endpoint: "/v1/images/generations", status: 200, cost_nanos: nanos(2 * 0.09) });
    expect(JSON.parse(row.extra)).toEqual({ images: 2 });
  });

  test("an edit (multipart) carries its model and file upstream and is charged per image and size", async () => {
    const png = noiseBytes(50_000, 21);
    const { response } = await client.images
      .edit({ image: await toFile(png, "cat.png", { type: "image/png" }), prompt: "a hat", model: "acme-img", n: 2, size: "256x256" })
      .withResponse();
    const [seen] = saw(/^POST \/v1\/images\/edits$/);
    const form = await new Response(seen!.bytes, { headers: { "content-type": seen!.headers.get("content-type")! } }).formData();
    expect(form.get("model")).toBe("acme-img");
    expect(sameBytes(new Uint8Array(await (form.get("image") as File).arrayBuffer()), png)).toBe(true);
    expect(await rowOf(response.headers.get("x-request-id"))).toMatchObject({ endpoint: "/v1/images/edits", effective_model: "acme-img", cost_nanos: nanos(2 * 0.01) });
  });

  test("a variation without a size is charged the model's per-call price", async () => {
    const { response } = await client.images.createVariation({ image: await toFile(noiseBytes(2000), "a.png", { type: "image/png" }), model: "acme-img" }).withResponse();
    expect(await rowOf(response.headers.get("x-request-id"))).toMatchObject({ endpoint: "/v1/images/variations", cost_nanos: nanos(0.05) });
  });

  test("token usage in the answer (gpt-image-1 style) is charged by ChatPricing when the model has no ImgPricing", async () => {
    const { data, response } = await client.images.generate({ model: "acme-image-tokens", prompt: "a cat" }).withResponse();
    expect(data.usage?.input_tokens).toBe(50);
    const row = await rowOf(response.headers.get("x-request-id"));
    // 40 text tokens × 5 + 10 image tokens × 10 + 4000 output tokens × 40, USD per 1M tokens.
    expect(row).toMatchObject({ prompt_tokens: 50, completion_tokens: 4000, source: "upstream", cost_nanos: Math.round((40 * 5 + 10 * 10 + 4000 * 40) * 1000 * RATES) });
  });

  test("an image call the upstream refuses (400) or that fails (502) is not charged", async () => {
    for (const fake of fakes) fake.once(() => Response.json({ error: { message: "bad prompt", type: "invalid_request_error" } }, { status: 400 }));
    const refused = await client.images.generate({ model: "acme-img", prompt: "x", n: 4 }).withResponse().catch((e) => e);
    expect(refused.status).toBe(400);
    for (const fake of fakes) fake.clear();
    for (const fake of fakes) fake.once(() => Response.json({ error: { message: "boom" } }, { status: 500 }));
    const failed = await client.images.generate({ model: "acme-img", prompt: "x", n: 4 }).catch((e) => e);
    expect(failed.status).toBe(502);
    // Not replayed: one upstream saw it.
    expect(saw(/^POST \/v1\/images\/generations$/)).toHaveLength(1);
    const rows = (await usageRows(router)).filter((row) => row.request_id === refused.headers.get("x-request-id") || row.request_id === failed.headers.get("x-request-id"));
    expect(rows.map((row) => [row.status, row.cost_nanos])).toEqual([
      [400, 0],
      [502, 0],
    ]);
  });
});

describe("audio", () => {
  test("a transcription (multipart) is charged per minute of the duration the upstream reports", async () => {
    const audio = noiseBytes(64_000, 4);
    const { data, response } = await client.audio.transcriptions
      .create({ file: await toFile(audio, "talk.mp3", { type: "audio/mpeg" }), model: "acme-whisper" })
      .withResponse();
    expect(data.text).toBe("hello");
    const [seen] = saw(/^POST \/v1\/audio\/transcriptions$/);
    const form = await new Response(seen!.bytes, { headers: { "content-type": seen!.headers.get("content-type")! } }).formData();
    expect(form.get("model")).toBe("acme-whisper");
    expect(sameBytes(new Uint8Array(await (form.get("file") as File).arrayBuffer()), audio)).toBe(true);
    const row = await rowOf(response.headers.get("x-request-id"));
    expect(row).toMatchObject({ endpoint: "/v1/audio/transcriptions", status: 200, cost_nanos: nanos((0.006 * TRANSCRIBED_SECONDS) / 60) });
    expect(JSON.parse(row.extra)).toEqual({ seconds: TRANSCRIBED_SECONDS });
  });

  test("a translation (multipart) likewise", async () => {
    const { response } = await client.audio.translations.create({ file: await toFile(noiseBytes(8000), "talk.mp3"), model: "acme-whisper" }).withResponse();
    expect(await rowOf(response.headers.get("x-request-id"))).toMatchObject({ endpoint: "/v1/audio/translations", cost_nanos: nanos((0.006 * TRANSCRIBED_SECONDS) / 3 / 60) });
  });

  test("speech comes back byte-identical as audio/mpeg, charged by the minutes estimated from its input (15 characters a second)", async () => {
    const input = "Hello there, this is a test. ".repeat(10).slice(0, 270);
    const res = await client.audio.speech.create({ model: "acme-tts", voice: "alloy", input });
    expect(res.headers.get("content-type")).toBe("audio/mpeg");
    const bytes = new Uint8Array(await res.arrayBuffer());
    expect(bytes.byteLength).toBe(SPEECH_BYTES);
    expect(sameBytes(bytes, noiseBytes(SPEECH_BYTES, 11))).toBe(true);
    const row = await rowOf(res.headers.get("x-request-id"));
    expect(row).toMatchObject({ endpoint: "/v1/audio/speech", status: 200, source: "estimated", cost_nanos: nanos((0.015 * 270) / 15 / 60) });
  });
});

test("a moderation without a model goes upstream untouched, routed and metered as omni-moderation-latest", async () => {
  const { data, response } = await client.moderations.create({ input: "hello" }).withResponse();
  expect(data.model).toBe("omni-moderation-latest");
  const [seen] = saw(/^POST \/v1\/moderations$/);
  expect(seen!.text).toBe('{"input":"hello"}');
  expect(await rowOf(response.headers.get("x-request-id"))).toMatchObject({ requested_model: "omni-moderation-latest", effective_model: "omni-moderation-latest", status: 200 });
});

describe("files", () => {
  test("upload, list (only the caller's), retrieve, content streamed byte-identical, delete; then 404 without an upstream call", async () => {
    const big = noiseBytes(3 * 1024 * 1024, 13);
    const mine = [
      await client.files.create({ file: await toFile(big, "big.jsonl"), purpose: "batch" }),
      await client.files.create({ file: await toFile(noiseBytes(100, 1), "a.jsonl"), purpose: "batch" }),
      await client.files.create({ file: await toFile(noiseBytes(200, 2), "b.jsonl"), purpose: "batch" }),
    ];
    const others = await ownerClient.files.create({ file: await toFile(noiseBytes(300, 3), "owner.jsonl"), purpose: "batch" });
    // Round-robin spread the uploads over the three keys.
    expect(new Set(mine.map((f) => creatorOf(f.id).name)).size).toBe(3);
    expect(mine[0]!).toMatchObject({ bytes: big.byteLength, filename: "big.jsonl" });

    const listed = [];
    for await (const file of client.files.list()) listed.push(file.id);
    expect(listed.sort()).toEqual(mine.map((f) => f.id).sort());
    expect(listed).not.toContain(others.id);

    for (const file of mine) {
      for (const fake of fakes) fake.clear();
      expect((await client.files.retrieve(file.id)).id).toBe(file.id);
      onlyOn(creatorOf(file.id), new RegExp(`^GET /v1/files/${file.id}$`));
    }

    const content = await client.files.content(mine[0]!.id);
    expect(content.headers.get("content-type")).toBe("application/octet-stream");
    expect(sameBytes(new Uint8Array(await content.arrayBuffer()), big)).toBe(true);

    expect(await client.files.delete(mine[1]!.id)).toMatchObject({ id: mine[1]!.id, deleted: true });
    onlyOn(creatorOf(mine[1]!.id), /^DELETE /);
    for (const fake of fakes) fake.clear();
    const gone = await client.files.retrieve(mine[1]!.id).catch((e) => e);
    expect(gone.status).toBe(404);
    expect(gone.error.code).toBe("object_not_found");
    nobodySaw(/./);
  });
});

describe("threads", () => {
  test("create, add a message, create a run, stream a run: all reach the key that created the thread", async () => {
    const thread = await client.beta.threads.create();
    const fake = creatorOf(thread.id);
    await client.beta.threads.messages.create(thread.id, { role: "user", content: "hi" });
    const run = await client.beta.threads.runs.create(thread.id, { assistant_id: "asst_1" });
    expect(run.thread_id).toBe(thread.id);
    expect((await client.beta.threads.runs.retrieve(run.id, { thread_id: thread.id })).status).toBe("completed");

    const events: string[] = [];
    const stream = client.beta.threads.runs.stream(thread.id, { assistant_id: "asst_1" });
    for await (const event of stream) events.push(event.event);
    expect(events).toEqual(["thread.run.created", "thread.run.in_progress", "thread.run.completed"]);

    onlyOn(fake, /^POST \/v1\/threads\/[^/]+\/messages$/);
    onlyOn(fake, /^POST \/v1\/threads\/[^/]+\/runs$/, 2);
    onlyOn(fake, /^GET \/v1\/threads\/[^/]+\/runs\//);
  });

  test("/v1/threads/runs (create and run) binds both the run and its thread", async () => {
    const run = await client.beta.threads.createAndRun({ assistant_id: "asst_1" });
    const fake = creatorOf(run.id);
    expect(creatorOf(run.thread_id)).toBe(fake);
    expect(await router.deps.affinity.lookup(run.id)).toMatchObject({ kind: "run", accountId: account.id });
    expect(await router.deps.affinity.lookup(run.thread_id)).toMatchObject({ kind: "thread", accountId: account.id });
    await client.beta.threads.retrieve(run.thread_id);
    await client.beta.threads.runs.retrieve(run.id, { thread_id: run.thread_id });
    onlyOn(fake, /^GET /, 2);
  });

  test("a create-and-run the upstream failed (500) is not replayed on another key: a run spends tokens", async () => {
    for (const fake of fakes) fake.once(() => Response.json({ error: { message: "boom" } }, { status: 500 }));
    const error = await client.beta.threads.createAndRun({ assistant_id: "asst_1" }).catch((e) => e);
    expect(error.status).toBe(502);
    expect(saw(/^POST \/v1\/threads\/runs$/)).toHaveLength(1);
  });

  test("a streamed create-and-run binds the thread and run its events announce", async () => {
    let threadId = "";
    let runId = "";
    const stream = await client.beta.threads.createAndRun({ assistant_id: "asst_1", stream: true });
    for await (const event of stream) {
      if (event.event === "thread.created") threadId = event.data.id;
      if (event.event === "thread.run.created") runId = event.data.id;
    }
    expect(threadId).toStartWith("thread_");
    const fake = creatorOf(threadId);
    expect(await router.deps.affinity.lookup(runId)).toMatchObject({ kind: "run", accountId: account.id });
    expect((await client.beta.threads.retrieve(threadId)).id).toBe(threadId);
    onlyOn(fake, /^GET /);
  });
});

describe("responses", () => {
  test("create binds the response: retrieve, input_items, cancel and delete reach its key; then it is gone", async () => {
    const created = await client.responses.create({ model: "acme-chat", input: "hi" });
    const fake = creatorOf(created.id);
    expect((await client.responses.retrieve(created.id)).id).toBe(created.id);
    const items = [];
    for await (const item of client.responses.inputItems.list(created.id)) items.push(item);
    expect(items).toHaveLength(1);
    expect((await client.responses.cancel(created.id)).status).toBe("cancelled");
    await client.responses.delete(created.id);
    onlyOn(fake, new RegExp(`/v1/responses/${created.id}`), 4);

    for (const f of fakes) f.clear();
    expect((await client.responses.retrieve(created.id).catch((e) => e)).status).toBe(404);
    nobodySaw(/./);
  });

  test("a streamed create binds the id announced by response.created", async () => {
    const stream = await client.responses.create({ model: "acme-chat", input: "hi", stream: true });
    let id = "";
    for await (const event of stream) if (event.type === "response.created") id = event.response.id;
    expect(id).toStartWith("resp_");
    expect((await client.responses.retrieve(id)).id).toBe(id);
    onlyOn(creatorOf(id), /^GET \/v1\/responses\//);
  });

  test("previous_response_id routes to the key holding the previous response; another account's is 404", async () => {
    const first = [];
    for (let i = 0; i < 3; i++) first.push(await client.responses.create({ model: "acme-chat", input: `turn ${i}` }));
    expect(new Set(first.map((r) => creatorOf(r.id).name)).size).toBe(3);
    for (const previous of first) {
      for (const f of fakes) f.clear();
      const next = await client.responses.create({ model: "acme-chat", input: "and then?", previous_response_id: previous.id });
      expect(creatorOf(next.id)).toBe(creatorOf(previous.id));
      onlyOn(creatorOf(previous.id), /^POST \/v1\/responses$/);
    }

    const owners = await ownerClient.responses.create({ model: "acme-chat", input: "mine" });
    for (const f of fakes) f.clear();
    const error = await client.responses.create({ model: "acme-chat", input: "x", previous_response_id: owners.id }).catch((e) => e);
    expect(error.status).toBe(404);
    expect(error.error).toMatchObject({ type: "not_found_error", code: "previous_response_not_found" });
    nobodySaw(/./);
  });
});

describe("video jobs", () => {
  test("a generation returns the upstream's request_id unchanged, is polled on the same key, and is charged PerSecond × seconds", async () => {
    const { data, response } = await client
      .post<{ request_id: string }>("/videos/generations", { body: { model: "acme-video", prompt: "a cat surfing", seconds: 8 } })
      .withResponse();
    expect(data.request_id).toStartWith("vidreq_");
    const fake = creatorOf(data.request_id);
    onlyOn(fake, /^POST \/v1\/videos\/generations$/);
    expect(await rowOf(response.headers.get("x-request-id"))).toMatchObject({ endpoint: "/v1/videos/generations", status: 200, cost_nanos: nanos(0.1 * 8) });

    const polled = (await client.videos.retrieve(data.request_id)) as unknown as { request_id: string; status: string };
    expect(polled).toMatchObject({ request_id: data.request_id, status: "done" });
    onlyOn(fake, new RegExp(`^GET /v1/videos/${data.request_id}$`));

    for (const f of fakes) f.clear();
    const stranger = await ownerClient.videos.retrieve(data.request_id).catch((e) => e);
    expect(stranger.status).toBe(404);
    nobodySaw(/./);
  });

  test("a failed generation is neither replayed nor charged", async () => {
    for (const fake of fakes) fake.once(() => Response.json({ error: { message: "boom" } }, { status: 503 }));
    const error = (await client.post("/videos/generations", { body: { model: "acme-video", prompt: "x", seconds: 8 } }).catch((e) => e)) as APIError;
    expect(error.status).toBe(502);
    expect(saw(/^POST \/v1\/videos\/generations$/)).toHaveLength(1);
    expect(await rowOf(error.headers?.get("x-request-id"))).toMatchObject({ status: 502, cost_nanos: 0 });
  });
});
