import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { toFile } from "openai";
import { addKey, usageRows } from "../helpers/keys.ts";
import { noiseBytes, sameBytes, startDroppingUpstream, startRawUpstream, type DroppingUpstream, type RawUpstream } from "../helpers/raw-upstream.ts";
import { startRouter, waitFor, type StartOptions, type TestRouter } from "../helpers/router.ts";
import { openaiClient } from "../helpers/sdk.ts";

/**
 * Issue 7: multipart bodies are spooled to disk and streamed upstream, never held
 * whole; --max-body bites while streaming; the model comes from the form; and
 * non-idempotent calls are not replayed once the upstream may have the body.
 */

/** Nothing listens on port 1: the connection is refused before anything is sent. */
const REFUSED = "https://127.0.0.1:1/v1";

const mocks: Array<RawUpstream | DroppingUpstream> = [];
const routers: TestRouter[] = [];
afterEach(async () => {
  for (const mock of mocks.splice(0)) await mock.stop();
  for (const router of routers.splice(0)) await router.stop();
});

async function router(options: StartOptions = {}): Promise<TestRouter> {
  const started = await startRouter(options);
  routers.push(started);
  return started;
}

const image = (id: string) => ({ created: 1, data: [{ url: `https://img.example/${id}.png` }] });
const uploaded = (id: string, bytes: number) => ({ id, object: "file", bytes, created_at: 1, filename: "data.jsonl", purpose: "batch", status: "processed" });

/** An upstream answering image calls and file uploads. */
function upstream(name = "mock"): RawUpstream {
  const mock = startRawUpstream(name)
    .route("POST", /^\/v1\/images\//, () => Response.json(image(name)))
    .route("POST", "/v1/files", (req) => Response.json(uploaded(`file-${name}-${mocks.length}`, req.bytes.byteLength)));
  mocks.push(mock);
  return mock;
}

/** The multipart parts as the upstream received them (decoded by the platform's own parser). */
async function formOf(req: { bytes: Uint8Array<ArrayBuffer>; headers: Headers }): Promise<FormData> {
  return new Response(req.bytes, { headers: { "content-type": req.headers.get("content-type")! } }).formData();
}

/** The spool directory's files and their sizes. */
function spooled(r: TestRouter): Array<{ name: string; size: number }> {
  const dir = join(r.dataDir, "tmp");
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    try {
      return [{ name, size: statSync(join(dir, name)).size }];
    } catch {
      return [];
    }
  });
}

/** An OpenAI client that also keeps the exact bytes and headers it sent, for byte-identity checks. */
function recordingClient(r: TestRouter, key = r.ownerKey) {
  const sent: Array<{ bytes: Uint8Array; contentType: string | null }> = [];
  const client = openaiClient(r.url, key);
  const fetchWithCopy = async (url: RequestInfo | URL, init?: RequestInit) => {
    // The SDK probes its fetch with `data:,` before a multipart call.
    if (String(url).startsWith("data:")) return fetch(url, init);
    const request = new Request(url, init);
    const bytes = new Uint8Array(await request.arrayBuffer());
    sent.push({ bytes, contentType: request.headers.get("content-type") });
    return fetch(url, { ...init, body: init?.method === "GET" ? undefined : bytes, headers: request.headers });
  };
  (client as unknown as { fetch: typeof fetch }).fetch = fetchWithCopy as typeof fetch;
  return { client, sent };
}

describe("multipart forwarding", () => {
  test("an image edit reaches the upstream byte-identical, with its model and file, and leaves no spool file", async () => {
    const r = await router();
    const mock = upstream();
    await addKey(r, { provider: `${mock.url}/v1` });
    const { client, sent } = recordingClient(r);
    // Bytes that look like multipart syntax inside the file must not confuse the field scanner.
    const png = new Uint8Array([...noiseBytes(300_000, 7), ...new TextEncoder().encode('\r\n--not-the-boundary\r\nname="model"\r\n\r\nfake')]);
    const result = await client.images.edit({
      image: await toFile(png, "cat.png", { type: "image/png" }),
      prompt: "add a hat",
      model: "acme-img-edit",
      size: "512x512",
    });
    expect(result.data?.[0]?.url).toBe("https://img.example/mock.png");

    expect(mock.requests).toHaveLength(1);
    const seen = mock.requests[0]!;
    expect(seen.path).toBe("/v1/images/edits");
    expect(seen.headers.get("content-type")).toBe(sent[0]!.contentType);
    expect(sameBytes(seen.bytes, sent[0]!.bytes)).toBe(true);
    const form = await formOf(seen);
    expect(form.get("model")).toBe("acme-img-edit");
    expect(form.get("prompt")).toBe("add a hat");
    const file = form.get("image") as File;
    expect(file.name).toBe("cat.png");
    expect(sameBytes(new Uint8Array(await file.arrayBuffer()), png)).toBe(true);

    const row = (await usageRows(r)).at(-1)!;
    expect(row).toMatchObject({ endpoint: "/v1/images/edits", requested_model: "acme-img-edit", effective_model: "acme-img-edit", status: 200 });
    expect(spooled(r)).toEqual([]);
  });

  test("through an Azure key: the deployment URL with api-version and api-key, the body byte-identical; a file upload beside the deployments", async () => {
    const r = await router();
    const azure = startRawUpstream("azure")
      .route("POST", "/openai/deployments/prod-img/images/edits", () => Response.json(image("azure")))
      .route("POST", "/openai/files", (req) => Response.json(uploaded("file-azure-1", req.bytes.byteLength)));
    mocks.push(azure);
    const key = await addKey(r, { provider: azure.url, config: { provider_type: "azure", deployments: { "acme-img": "prod-img" }, api_versions: { "acme-img": "2025-01-01" } } });
    const { client, sent } = recordingClient(r);
    await client.images.edit({ image: await toFile(noiseBytes(20_000, 8), "a.png", { type: "image/png" }), prompt: "p", model: "acme-img" });
    await client.files.create({ file: await toFile(noiseBytes(5000, 9), "f.jsonl"), purpose: "batch" });
    const [edit, upload] = azure.requests;
    expect(edit!.query.get("api-version")).toBe("2025-01-01");
    expect(edit!.headers.get("api-key")).toBe(key.secret);
    expect(edit!.headers.get("authorization")).toBeNull();
    expect(sameBytes(edit!.bytes, sent[0]!.bytes)).toBe(true);
    expect(upload!.path).toBe("/openai/files");
    expect(upload!.query.get("api-version")).toBeTruthy();
    expect(sameBytes(upload!.bytes, sent[1]!.bytes)).toBe(true);
  });

  test("a form without a model field uses the endpoint's default model; a form without a file is 400", async () => {
    const r = await router();
    const mock = upstream();
    await addKey(r, { provider: `${mock.url}/v1` });
    const client = openaiClient(r.url, r.ownerKey);
    await client.images.createVariation({ image: await toFile(noiseBytes(1000), "a.png", { type: "image/png" }) });
    expect((await usageRows(r)).at(-1)).toMatchObject({ endpoint: "/v1/images/variations", requested_model: "dall-e-2", status: 200 });
    expect((await formOf(mock.requests[0]!)).get("model")).toBeNull();

    const form = new FormData();
    form.set("model", "dall-e-2");
    form.set("prompt", "x");
    const res = await r.fetch("/v1/images/edits", { method: "POST", body: form });
    expect(res.status).toBe(400);
    expect((await res.json()).error.param).toBe("file");
    expect(mock.requests).toHaveLength(1);
    expect(spooled(r)).toEqual([]);
  });

  test("a body that is not multipart/form-data with a boundary is 400 in the OpenAI envelope, nothing forwarded", async () => {
    const r = await router();
    const mock = upstream();
    await addKey(r, { provider: `${mock.url}/v1` });
    for (const contentType of ["application/json", "multipart/form-data"]) {
      const res = await r.fetch("/v1/audio/transcriptions", { method: "POST", headers: { "content-type": contentType }, body: '{"model":"whisper-1"}' });
      expect(res.status).toBe(400);
      expect((await res.json()).error).toMatchObject({ type: "invalid_request_error" });
    }
    expect(mock.requests).toHaveLength(0);
    expect(spooled(r)).toEqual([]);
  });

  test("a form giving `model` twice is 400: the upstream might use the other one than the router checked and priced", async () => {
    const r = await router();
    const mock = upstream();
    await addKey(r, { provider: `${mock.url}/v1` });
    const form = new FormData();
    form.append("model", "cheap-model");
    form.append("image", new File([noiseBytes(100)], "a.png"));
    form.append("model", "dear-model");
    const res = await r.fetch("/v1/images/edits", { method: "POST", body: form });
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatchObject({ param: "model", type: "invalid_request_error" });
    expect(mock.requests).toHaveLength(0);
    expect(spooled(r)).toEqual([]);
  });

  test("MODEL_MAPPER mapping the form's model to another is 400 explaining why, nothing forwarded", async () => {
    const r = await router();
    const mock = upstream();
    await addKey(r, { provider: `${mock.url}/v1` });
    expect((await r.fetch("/x-config", { method: "PUT", body: JSON.stringify({ MODEL_MAPPER: "whisper-alias=whisper-1" }) })).status).toBe(200);
    const client = openaiClient(r.url, r.ownerKey);
    const error = await client.audio.transcriptions
      .create({ file: await toFile(noiseBytes(2000), "a.mp3", { type: "audio/mpeg" }), model: "whisper-alias" })
      .catch((e) => e);
    expect(error.status).toBe(400);
    expect(error.error).toMatchObject({ param: "model", type: "invalid_request_error" });
    expect(error.error.message).toContain("whisper-alias is mapped to whisper-1");
    expect(error.error.message).toContain("call whisper-1 directly");
    expect(mock.requests).toHaveLength(0);
    expect(spooled(r)).toEqual([]);
  });
});

describe("--max-body on a multipart upload", () => {
  const LIMIT = 1_000_000;
  const UPLOAD = 5 * 1024 * 1024;

  test("a declared 5 MB upload is refused with 413 in the OpenAI envelope; nothing forwarded or spooled", async () => {
    const r = await router({ config: { maxBody: LIMIT } });
    const mock = upstream();
    await addKey(r, { provider: `${mock.url}/v1` });
    const client = openaiClient(r.url, r.ownerKey);
    const error = await client.files.create({ file: await toFile(noiseBytes(UPLOAD), "big.jsonl"), purpose: "batch" }).catch((e) => e);
    expect(error.status).toBe(413);
    expect(error.error).toEqual({ message: expect.stringContaining(`${LIMIT} bytes`), type: "request_too_large", param: null, code: "request_too_large" });
    expect(mock.requests).toHaveLength(0);
    expect(spooled(r)).toEqual([]);
  });

  test("a chunked upload without Content-Length is cut at the limit: the spool file never passes it and is removed", async () => {
    const r = await router({ config: { maxBody: LIMIT } });
    const mock = upstream();
    await addKey(r, { provider: `${mock.url}/v1` });
    const boundary = "----chunked-upload-boundary";
    const head = new TextEncoder().encode(
      `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.jsonl"\r\nContent-Type: application/octet-stream\r\n\r\n`,
    );
    const chunk = noiseBytes(64 * 1024, 3);
    let sent = 0;
    let largest = 0;
    let sawSpool = false;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        // Look at the spool between chunks: it must exist while streaming and stay under the limit.
        for (const file of spooled(r)) {
          sawSpool = true;
          largest = Math.max(largest, file.size);
        }
        if (sent === 0) controller.enqueue(head);
        if (sent >= UPLOAD) {
          controller.enqueue(new TextEncoder().encode(`\r\n--${boundary}--\r\n`));
          controller.close();
          return;
        }
        sent += chunk.byteLength;
        controller.enqueue(chunk);
        await Bun.sleep(1);
      },
    });
    const res = await r
      .fetch("/v1/files", { method: "POST", headers: { "content-type": `multipart/form-data; boundary=${boundary}` }, body, duplex: "half" } as RequestInit)
      .catch((e: Error) => e);
    // The router answers 413 as soon as the limit passes; the client may still be sending.
    if (res instanceof Response) {
      expect(res.status).toBe(413);
      expect((await res.json()).error.code).toBe("request_too_large");
    }
    expect(sawSpool).toBe(true);
    expect(largest).toBeGreaterThan(0);
    expect(largest).toBeLessThanOrEqual(LIMIT);
    expect(sent).toBeLessThan(UPLOAD);
    await waitFor(() => spooled(r).length === 0, 2000, "spool file removed");
    expect(mock.requests).toHaveLength(0);
    const status = await waitFor(() => r.logs.find((line) => line.includes("path=/v1/files") && line.includes("status=")), 2000, "request log");
    expect(status).toContain("status=413");
  });

  test("an upload under the limit passes whole, chunked, and its spool file is removed afterwards", async () => {
    const r = await router({ config: { maxBody: LIMIT } });
    const mock = upstream();
    await addKey(r, { provider: `${mock.url}/v1` });
    const form = new FormData();
    form.set("purpose", "batch");
    form.set("file", new File([noiseBytes(600_000, 5)], "ok.jsonl"));
    const serialised = new Response(form);
    const contentType = serialised.headers.get("content-type")!;
    const bytes = new Uint8Array(await serialised.arrayBuffer());
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < bytes.byteLength; at += 50_000) controller.enqueue(bytes.slice(at, at + 50_000));
        controller.close();
      },
    });
    const res = await r.fetch("/v1/files", { method: "POST", headers: { "content-type": contentType }, body, duplex: "half" } as RequestInit);
    expect(res.status).toBe(200);
    expect((await formOf(mock.requests[0]!)).get("purpose")).toBe("batch");
    expect(sameBytes(mock.requests[0]!.bytes, bytes)).toBe(true);
    expect(mock.requests[0]!.headers.get("content-type")).toBe(contentType);
    expect(spooled(r)).toEqual([]);
  });
});

describe("no replay of non-idempotent calls", () => {
  const generate = (r: TestRouter) =>
    openaiClient(r.url, r.ownerKey)
      .images.generate({ model: "acme-img", prompt: "a cat" })
      .catch((e) => e);
  const upload = async (r: TestRouter) =>
    openaiClient(r.url, r.ownerKey)
      .files.create({ file: await toFile(noiseBytes(10_000), "d.jsonl"), purpose: "batch" })
      .catch((e) => e);

  test("image generation answered 500 is not retried on the second key: 502", async () => {
    const r = await router();
    const bad = startRawUpstream("bad").route("POST", "/v1/images/generations", () => Response.json({ error: { message: "boom" } }, { status: 500 }));
    mocks.push(bad);
    const good = upstream("good");
    await addKey(r, { provider: `${bad.url}/v1` });
    await addKey(r, { provider: `${good.url}/v1` });
    const error = await generate(r);
    expect(error.status).toBe(502);
    expect(error.error.code).toBe("upstream_error");
    expect(bad.requests).toHaveLength(1);
    expect(good.requests).toHaveLength(0);
  });

  test("image generation whose connection drops after the upstream read the body is not retried: 502", async () => {
    const r = await router();
    const dropping = await startDroppingUpstream();
    mocks.push(dropping);
    const good = upstream("good");
    await addKey(r, { provider: `${dropping.url}/v1` });
    await addKey(r, { provider: `${good.url}/v1` });
    const error = await generate(r);
    expect(error.status).toBe(502);
    expect(dropping.received).toHaveLength(1);
    expect(JSON.parse(new TextDecoder().decode(dropping.received[0]!))).toMatchObject({ model: "acme-img", prompt: "a cat" });
    expect(good.requests).toHaveLength(0);
  });

  test("a refused connection (nothing sent) is retried on the second key", async () => {
    const r = await router();
    const good = upstream("good");
    await addKey(r, { provider: REFUSED });
    await addKey(r, { provider: `${good.url}/v1` });
    const result = await generate(r);
    expect(result.data[0].url).toBe("https://img.example/good.png");
    expect(good.requests).toHaveLength(1);
  });

  test.each(["500", "a dropped connection"])("a file upload answered %s is not retried on the second key: 502", async (how) => {
    const r = await router();
    const bad =
      how === "500"
        ? startRawUpstream("bad").route("POST", "/v1/files", () => Response.json({ error: { message: "boom" } }, { status: 500 }))
        : await startDroppingUpstream();
    mocks.push(bad);
    const good = upstream("good");
    await addKey(r, { provider: `${bad.url}/v1` });
    await addKey(r, { provider: `${good.url}/v1` });
    const failed = await upload(r);
    expect(failed.status).toBe(502);
    expect("requests" in bad ? bad.requests : bad.received).toHaveLength(1);
    expect(good.requests).toHaveLength(0);
    expect(spooled(r)).toEqual([]);
  });

  test("a file upload whose connection is refused is retried with the whole body from the spool", async () => {
    const r = await router();
    const good = upstream("good");
    await addKey(r, { provider: REFUSED });
    await addKey(r, { provider: `${good.url}/v1` });
    const { client, sent } = recordingClient(r);
    const file = await client.files.create({ file: await toFile(noiseBytes(200_000, 9), "d.jsonl"), purpose: "batch" });
    expect(file.id).toStartWith("file-good-");
    expect(good.requests).toHaveLength(1);
    expect(sameBytes(good.requests[0]!.bytes, sent[0]!.bytes)).toBe(true);
    expect(r.logs.some((line) => line.includes("failure=refused"))).toBe(true);
    expect(spooled(r)).toEqual([]);
  });
});
