import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import AnthropicV0 from "anthropic-v0";
import { ApiError } from "@google/genai";
import { ApiError as ApiErrorV3 } from "genai-v3";
import { addKey, usageRows } from "../helpers/keys.ts";
import { json, sse, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter, waitFor, type TestRouter } from "../helpers/router.ts";
import { anthropicClient, anthropicV0Client, geminiClient, geminiV3Client, openaiClient } from "../helpers/sdk.ts";

/**
 * What the official SDKs call beyond the model endpoints, with only base URL and key
 * changed: each is served, or refused in that SDK's own envelope so it raises a typed
 * error with a message saying why (not an authentication error for a good key, not a
 * call sent to another provider's API).
 */

const PRICING = {
  ChatPricing: {
    "*": { InputText: 0, OutputText: 0 },
    "acme-embed": { InputText: 2, OutputText: 0 },
    "acme-transcribe": { InputText: 6, OutputText: 10 },
    "acme-image-tokens": { InputText: 5, OutputText: 40 },
  },
};

let router: TestRouter;
let upstream: MockUpstream;

beforeAll(async () => {
  upstream = startMockUpstream();
  router = await startRouter({ pricing: PRICING });
  // A key on a host the router does not know speaks every format: whatever reaches it is forwarded.
  await addKey(router, { provider: upstream.url });
  await router.deps.settings.update({ MODEL_MAPPER: "team-embed=text-embedding-004" });
});
afterAll(async () => {
  await router.stop();
  await upstream.stop();
});
beforeEach(() => {
  upstream.reset();
  upstream.route("POST", "/v1/files", () => json({ id: "file-up1", object: "file", bytes: 5, created_at: 1, filename: "a.jsonl", purpose: "batch" }));
});

const uploadFile = () => new File(["hello"], "a.txt", { type: "text/plain" });

/** The error an SDK call raised (fails the test when it succeeded). */
async function raised(call: () => Promise<unknown>): Promise<any> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  throw new Error("the call succeeded");
}

describe("the Anthropic Files API (beta.files), which shares /v1/files with OpenAI's", () => {
  const NOT_SERVED = /Anthropic Files API is not served by this router/;

  test("1.x: upload, list, metadata, download and delete raise NotFoundError saying so; nothing goes upstream as an OpenAI upload", async () => {
    const client = anthropicClient(router.url, router.ownerKey);
    const calls: Array<[string, () => Promise<unknown>]> = [
      ["upload", () => client.beta.files.upload({ file: uploadFile() })],
      ["list", () => client.beta.files.list()],
      ["metadata", () => client.beta.files.retrieveMetadata("file_011")],
      ["download", () => client.beta.files.download("file_011")],
      ["delete", () => client.beta.files.delete("file_011")],
    ];
    for (const [name, call] of calls) {
      const error = await raised(call);
      expect([name, error]).toEqual([name, expect.any(Anthropic.NotFoundError)]);
      expect(error.status).toBe(404);
      // Anthropic's envelope, so the SDK's error carries the type and message.
      expect(error.error).toMatchObject({ type: "error", error: { type: "not_found_error", message: expect.stringMatching(NOT_SERVED) } });
    }
    expect(upstream.requests).toHaveLength(0);
  });

  test("0.x (x-api-key): the same NotFoundError, not an AuthenticationError for a key that is right", async () => {
    const client = anthropicV0Client(router.url, router.ownerKey);
    for (const call of [() => client.beta.files.upload({ file: uploadFile() }), () => client.beta.files.list(), () => client.beta.files.retrieveMetadata("file_011")]) {
      const error = await raised(call);
      expect(error).toBeInstanceOf(AnthropicV0.NotFoundError);
      expect(error.message).toMatch(NOT_SERVED);
    }
    expect(upstream.requests).toHaveLength(0);
  });

  test("a wrong key is still an AuthenticationError, in Anthropic's envelope", async () => {
    const error = await raised(() => anthropicV0Client(router.url, "sk-wrong-0123456789").beta.files.list());
    expect(error).toBeInstanceOf(AnthropicV0.AuthenticationError);
    expect(error.error).toMatchObject({ type: "error", error: { type: "authentication_error" } });
  });

  test("the OpenAI SDK's upload on the same path is still served", async () => {
    const file = await openaiClient(router.url, router.ownerKey).files.create({ file: new File(["{}"], "a.jsonl"), purpose: "batch" });
    expect(file.id).toBe("file-up1");
    expect(upstream.requests.map((r) => `${r.method} ${r.path}`)).toEqual(["POST /v1/files"]);
  });
});

describe("the Gemini Files API and other @google/genai resources", () => {
  test("3.x files.get and files.list (on /v1/files) raise a 404 saying the Files API is not served, not a 401 asking for a Bearer key", async () => {
    const client = geminiV3Client(router.url, router.ownerKey);
    for (const call of [() => client.files.get({ name: "files/abc" }), () => client.files.list()]) {
      const error = await raised(call);
      expect(error).toBeInstanceOf(ApiErrorV3);
      expect(error.status).toBe(404);
      expect(JSON.parse(error.message)).toEqual({ error: { code: 404, message: expect.stringMatching(/Gemini Files API is not served/), status: "NOT_FOUND" } });
    }
    expect(upstream.requests).toHaveLength(0);
  });

  test("files.upload (the resumable upload URL /upload/v1beta/files) and 3.x caches are refused in Gemini's envelope", async () => {
    const upload = await raised(() => geminiClient(router.url, router.ownerKey).files.upload({ file: new Blob(["hello"], { type: "text/plain" }) }));
    expect(upload).toBeInstanceOf(ApiError);
    expect(upload.status).toBe(404);
    expect(JSON.parse(upload.message).error).toMatchObject({ code: 404, status: "NOT_FOUND" });
    const caches = await raised(() => geminiV3Client(router.url, router.ownerKey).caches.list());
    expect(caches.status).toBe(404);
    expect(JSON.parse(caches.message).error).toMatchObject({ code: 404, status: "NOT_FOUND" });
    expect(upstream.requests).toHaveLength(0);
  });
});

/** The usage row of one call, by the request id the router answered with. */
const rowOf = async (requestId: string | null | undefined): Promise<Record<string, any>> =>
  (await waitFor(async () => (await usageRows(router)).find((row) => row.request_id === requestId), 3000, `usage row ${requestId}`))!;

describe("OpenAI SDK calls that are served: the answer intact and metered", () => {
  test("embeddings: the SDK asks base64 by default; the vectors decode as sent and the usage is charged", async () => {
    const vector = new Float32Array([0.5, -1, 2]);
    const encoded = Buffer.from(vector.buffer).toString("base64");
    upstream.route("POST", "/v1/embeddings", (r) =>
      json({ object: "list", model: "acme-embed", data: [{ object: "embedding", index: 0, embedding: r.json.encoding_format === "base64" ? encoded : [...vector] }], usage: { prompt_tokens: 7, total_tokens: 7 } }),
    );
    const { data, response } = await openaiClient(router.url, router.ownerKey).embeddings.create({ model: "acme-embed", input: "hello" }).withResponse();
    expect(upstream.requests[0]!.json).toEqual({ model: "acme-embed", input: "hello", encoding_format: "base64" });
    expect(data.data[0]!.embedding).toEqual([0.5, -1, 2]);
    const row = await rowOf(response.headers.get("x-request-id"));
    expect(row).toMatchObject({ endpoint: "/v1/embeddings", status: 200, prompt_tokens: 7, completion_tokens: 0, cost_nanos: 7 * 2 * 1000 });
  });

  test("a streamed transcription: the SDK gets every event; the tokens of transcript.text.done are charged", async () => {
    const done = { type: "transcript.text.done", text: "hello there", usage: { type: "tokens", input_tokens: 14, input_token_details: { text_tokens: 0, audio_tokens: 14 }, output_tokens: 45, total_tokens: 59 } };
    upstream.route("POST", "/v1/audio/transcriptions", () => sse([{ type: "transcript.text.delta", delta: "hello" }, { type: "transcript.text.delta", delta: " there" }, done]));
    const client = openaiClient(router.url, router.ownerKey);
    const { data: stream, response } = await client.audio.transcriptions
      .create({ model: "acme-transcribe", file: new File([new Uint8Array(4000)], "a.wav", { type: "audio/wav" }), stream: true })
      .withResponse();
    const events: any[] = [];
    for await (const event of stream) events.push(event);
    expect(events.map((e) => e.type)).toEqual(["transcript.text.delta", "transcript.text.delta", "transcript.text.done"]);
    expect(events[2]).toEqual(done);
    const row = await rowOf(response.headers.get("x-request-id"));
    expect(row).toMatchObject({ endpoint: "/v1/audio/transcriptions", status: 200, stream: 1, prompt_tokens: 14, completion_tokens: 45 });
    expect(row.cost_nanos).toBe((14 * 6 + 45 * 10) * 1000);
  });

  test("a streamed image generation: partial images and the final image reach the SDK; the final event's tokens are charged", async () => {
    const partial = { type: "image_generation.partial_image", b64_json: "AAAA", partial_image_index: 0, created_at: 1, size: "1024x1024", quality: "low", background: "opaque", output_format: "png" };
    const completed = { type: "image_generation.completed", b64_json: "BBBB", created_at: 1, size: "1024x1024", quality: "low", background: "opaque", output_format: "png", usage: { input_tokens: 20, output_tokens: 300, total_tokens: 320, input_tokens_details: { text_tokens: 20, image_tokens: 0 } } };
    upstream.route("POST", "/v1/images/generations", () => sse([["image_generation.partial_image", partial], ["image_generation.completed", completed]]));
    const { data: stream, response } = await openaiClient(router.url, router.ownerKey).images.generate({ model: "acme-image-tokens", prompt: "a cat", stream: true, partial_images: 1 }).withResponse();
    const events: any[] = [];
    for await (const event of stream) events.push(event);
    expect(events).toEqual([partial, completed]);
    const row = await rowOf(response.headers.get("x-request-id"));
    expect(row).toMatchObject({ endpoint: "/v1/images/generations", status: 200, stream: 1, prompt_tokens: 20, completion_tokens: 300 });
    expect(row.cost_nanos).toBe((20 * 5 + 300 * 40) * 1000);
  });
});

describe("Gemini embedContent with a MODEL_MAPPER alias", () => {
  /** Google's batchEmbedContents: each request's model must be the path's (a 400 otherwise). */
  const strictBatchEmbed = () =>
    upstream.route("POST", /:batchEmbedContents$/, (r) => {
      const pathModel = `models/${decodeURIComponent(/\/models\/([^/:]+):/.exec(r.path)![1]!)}`;
      const wrong = (r.json.requests as Array<{ model?: string }>).find((request) => request.model !== pathModel);
      if (wrong) return json({ error: { code: 400, message: `Model ${wrong.model} does not match ${pathModel}`, status: "INVALID_ARGUMENT" } }, 400);
      return json({ embeddings: r.json.requests.map(() => ({ values: [0.25, 0.5] })) });
    });

  test("2.x and 3.x (sent as batchEmbedContents): each request's model is the mapped one too, so the upstream serves the batch", async () => {
    strictBatchEmbed();
    for (const client of [geminiClient(router.url, router.ownerKey), geminiV3Client(router.url, router.ownerKey)]) {
      const result = await client.models.embedContent({ model: "team-embed", contents: ["first", "second"] });
      expect(result.embeddings?.map((e) => e.values)).toEqual([[0.25, 0.5], [0.25, 0.5]]);
    }
    const seen = upstream.requests.map((r) => [r.path, r.json.requests.map((q: { model: string }) => q.model)]);
    expect(seen).toEqual([
      ["/v1beta/models/text-embedding-004:batchEmbedContents", ["models/text-embedding-004", "models/text-embedding-004"]],
      ["/v1/models/text-embedding-004:batchEmbedContents", ["models/text-embedding-004", "models/text-embedding-004"]],
    ]);
  });

  test("an unmapped model's body goes upstream byte for byte", async () => {
    strictBatchEmbed();
    const body = '{"requests":[{"model":"models/acme-embed","content":{"parts":[{"text":"a"}]}}] }';
    const res = await router.fetch("/v1beta/models/acme-embed:batchEmbedContents", { method: "POST", body, headers: { "content-type": "application/json" } });
    expect(res.status).toBe(200);
    expect(upstream.requests[0]!.body).toBe(body);
  });
});

describe("models.retrieve of a model id holding a colon (a fine-tune, an Ollama tag)", () => {
  // `GET /v1/models/llama3:latest` looks like a Gemini method path, `{model}:{method}`; only a POST is one.
  test("the OpenAI and Anthropic SDKs get their own shape, not Gemini's", async () => {
    for (const id of ["llama3:latest", "ft:gpt-4o-mini:acme::AbCdEfGh"]) {
      const openai = await openaiClient(router.url, router.ownerKey).models.retrieve(id);
      expect(openai).toMatchObject({ id, object: "model", owned_by: "router" });
      const anthropic = await anthropicClient(router.url, router.ownerKey).models.retrieve(id);
      expect(anthropic).toMatchObject({ type: "model", id, display_name: id });
    }
  });

  test("the Gemini SDK's own get and generateContent on /v1/models stay Gemini's", async () => {
    upstream.route("POST", /:generateContent$/, () => json({ candidates: [{ content: { role: "model", parts: [{ text: "hi" }] }, finishReason: "STOP" }], usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1, totalTokenCount: 2 } }));
    const client = geminiV3Client(router.url, router.ownerKey);
    expect((await client.models.get({ model: "gemini-x" })).name).toBe("models/gemini-x");
    expect((await client.models.generateContent({ model: "gemini-x", contents: "hi" })).text).toBe("hi");
    expect(upstream.requests.map((r) => r.path)).toEqual(["/v1/models/gemini-x:generateContent"]);
  });
});

describe("Gemini SDK calls on a model whose name holds a slash (vendor/model)", () => {
  const answer = () => json({ candidates: [{ content: { role: "model", parts: [{ text: "hi" }] }, finishReason: "STOP" }], usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1, totalTokenCount: 2 } });

  test("2.x and 3.x: get and generateContent are served (the SDKs put the slash in the path unencoded)", async () => {
    upstream.route("POST", /:generateContent$/, answer);
    for (const client of [geminiClient(router.url, router.ownerKey), geminiV3Client(router.url, router.ownerKey)]) {
      expect((await client.models.get({ model: "vendor/model-x" })).name).toBe("models/vendor/model-x");
      expect((await client.models.generateContent({ model: "vendor/model-x", contents: "hi" })).text).toBe("hi");
    }
    expect(upstream.requests.map((r) => r.path)).toEqual(["/v1beta/models/vendor%2Fmodel-x:generateContent", "/v1/models/vendor%2Fmodel-x:generateContent"]);
  });

  test("a path model that is not valid percent-encoding is a 400 in the family's envelope, not a 500", async () => {
    const post = await router.fetch("/v1beta/models/%E0:generateContent", { method: "POST", body: "{}" });
    expect(post.status).toBe(400);
    expect((await post.json()).error).toMatchObject({ code: 400, status: "INVALID_ARGUMENT", message: expect.stringMatching(/percent-encoding/) });
    const get = await router.fetch("/v1/models/%E0");
    expect(get.status).toBe(400);
    expect((await get.json()).error).toMatchObject({ type: "invalid_request_error", param: "model" });
    expect(upstream.requests).toHaveLength(0);
  });
});

describe("file content as stored", () => {
  test("a stored JSON file that is an error object, or a bare number, comes back as it is (not taken for the upstream's failure)", async () => {
    const client = openaiClient(router.url, router.ownerKey);
    const file = await client.files.create({ file: new File(["{}"], "a.json"), purpose: "user_data" });
    for (const stored of ['{"error":{"message":"a logged failure, kept as data"}}', "42"]) {
      upstream.once(() => new Response(stored, { headers: { "content-type": "application/json" } }));
      const content = await client.files.content(file.id);
      expect([content.status, await content.text()]).toEqual([200, stored]);
    }
  });
});
