import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import type { PoolKey } from "../../src/routing/pool-key.ts";
import { createVertexAdapter } from "../../src/upstreams/vertex.ts";
import { addKey } from "../helpers/keys.ts";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";
import { geminiClient, openaiClient } from "../helpers/sdk.ts";

/**
 * Loose ends of Vertex AI keys: what the adapter keeps of a key's service account, a key
 * file that no longer parses at call time, and the key test's token exchange.
 */

let router: TestRouter;
let vertex: MockUpstream;
let tokens: MockUpstream;

function serviceAccount(tokenUri: string, extra: Record<string, string> = {}): string {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048, privateKeyEncoding: { type: "pkcs8", format: "pem" }, publicKeyEncoding: { type: "spki", format: "pem" } });
  return JSON.stringify({ type: "service_account", project_id: "proj-1", private_key: privateKey, client_email: "router@proj-1.iam.gserviceaccount.com", token_uri: tokenUri, ...extra });
}

const geminiAnswer = (text: string) => ({
  candidates: [{ content: { role: "model", parts: [{ text }] }, finishReason: "STOP", index: 0 }],
  usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 2, totalTokenCount: 5 },
});

const geminiCall = (model: string) =>
  router.fetch(`/v1beta/models/${model}:generateContent`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }) });

const poolKey = (id: number) => router.deps.pool.get(id)!;

beforeAll(async () => {
  vertex = startMockUpstream();
  tokens = startMockUpstream();
  router = await startRouter({ config: { firstByteTimeoutMs: 1500 } });
  await router.deps.settings.update({ LEVEL_MAPPER: "bad-*=2,kt-*=3,emb-*=4,mix-*=5" });
});
afterAll(async () => {
  await router.stop();
  await Promise.all([vertex.stop(), tokens.stop()]);
});
beforeEach(() => {
  for (const mock of [vertex, tokens]) mock.reset();
});

describe("Vertex credentials held by the adapter", () => {
  test("a Vertex key's parsed service account (its private key) is not kept once the key is gone", async () => {
    // Built at run time; the test holds only its stem, so "<stem>-key" is in the heap only while the key file is.
    const marker = ["vx2", "gone", Date.now().toString(36), Math.random().toString(36).slice(2)].join("-");
    const adapter = createVertexAdapter();
    // In a scope of its own, so nothing here holds the key once it has left the pool.
    await (async () => {
      const key = {
        id: 424242,
        name: "gone",
        level: 1,
        provider: "https://aiplatform.googleapis.com",
        secret: serviceAccount("https://127.0.0.1:9/token", { private_key_id: `${marker}-key` }),
        config: { provider_type: "vertex", location: "us-east5", base_url: "https://127.0.0.1:9" },
      } as unknown as PoolKey;
      await adapter
        .prepare(key, { family: "gemini", method: "POST", path: "/v1beta/models/m:generateContent", search: "", model: "m", stream: false, json: {}, bytes: undefined, headers: new Headers() })
        .then(
          () => expect.unreachable("the token endpoint is a closed port"),
          () => {},
        );
    })();
    // A few collections apart: the collector scans stacks conservatively, so one may miss.
    for (let i = 0; i < 5; i++) {
      await Bun.sleep(50);
      Bun.gc(true);
    }
    expect(Bun.generateHeapSnapshot("v8").includes(`${marker}-key`)).toBe(false);
    // The adapter itself lives on (as it does for the process's life).
    expect(adapter.supports).toBeFunction();
  });
});

describe("Vertex token exchange for a call already given up", () => {
  test("an exchange started for a call whose client had already left cannot fail unobserved (it would take the process down)", async () => {
    const unobserved: unknown[] = [];
    const note = (reason: unknown) => unobserved.push(reason);
    process.on("unhandledRejection", note);
    try {
      const adapter = createVertexAdapter();
      const key = {
        id: 434343,
        name: "left",
        level: 1,
        provider: "https://aiplatform.googleapis.com",
        secret: serviceAccount("https://127.0.0.1:9/token"),
        config: { provider_type: "vertex", location: "us-east5", base_url: "https://127.0.0.1:9" },
      } as unknown as PoolKey;
      const call = { family: "gemini", method: "POST", path: "/v1beta/models/m:generateContent", search: "", model: "m", stream: false, json: {}, bytes: undefined, headers: new Headers() } as const;
      // The attempt's signal is aborted before its token is asked for (the client left).
      const gone = await adapter.prepare(key, call, AbortSignal.abort(new Error("client left"))).then(
        () => undefined,
        (error: Error) => error.message,
      );
      expect(gone).toBe("client left");
      // The exchange it started (to a closed port) fails a moment later.
      await Bun.sleep(300);
      expect(unobserved).toEqual([]);
    } finally {
      process.off("unhandledRejection", note);
    }
  });
});

describe("Vertex key file that no longer parses at call time", () => {
  test("is a dead credential: the key sleeps with reason auth, no token exchange, no model call", async () => {
    const { id } = await addKey(router, {
      provider: "https://aiplatform.googleapis.com",
      level: 2,
      name: "bad",
      secret: serviceAccount(`${tokens.url}/token`),
      config: { provider_type: "vertex", location: "us-east5", base_url: vertex.url },
    });
    // A key file stored before today's rules (a token_uri over plain http): refused when
    // a key is saved now, met only at call time in a key stored earlier.
    Object.assign(poolKey(id), { secret: serviceAccount("http://oauth.example.test/token") });
    tokens.route("POST", "/token", () => json({ access_token: "ya29.never", expires_in: 3600, token_type: "Bearer" }));
    vertex.route("POST", /bad-model:generateContent$/, () => json(geminiAnswer("never")));
    const res = await geminiCall("bad-model");
    expect(res.status).toBe(502);
    const body = (await res.json()) as { error: { message: string } };
    expect(body.error.message).toContain("refused the provider key");
    expect(tokens.requests).toHaveLength(0);
    expect(vertex.requests).toHaveLength(0);
    const key = poolKey(id);
    expect(key.sleeping).toBe(true);
    expect(key.sleepReason).toBe("auth");
  });
});

describe("Vertex key test", () => {
  test("exchanges a fresh token: a service account refused since the last exchange tests as refused, and calls keep their token", async () => {
    const { id } = await addKey(router, {
      provider: "https://aiplatform.googleapis.com",
      level: 3,
      name: "kt",
      secret: serviceAccount(`${tokens.url}/token`),
      config: { provider_type: "vertex", location: "us-east5", base_url: vertex.url },
    });
    // The mock answers with its first matching route: the test switches what this one says.
    let refused = false;
    let minted = "ya29.first";
    tokens.route("POST", "/token", () =>
      refused ? json({ error: "invalid_grant", error_description: "Invalid JWT Signature." }, 400) : json({ access_token: minted, expires_in: 3600, token_type: "Bearer" }),
    );
    vertex.route("POST", /kt-model:generateContent$/, () => json(geminiAnswer("ok")));
    expect((await geminiCall("kt-model")).status).toBe(200);
    expect(tokens.requests).toHaveLength(1);

    // The service account's key is deleted in Google Cloud: the next exchange is refused.
    refused = true;
    const tested = await router.fetch(`/x-keys/${id}/test`, { method: "POST" });
    expect(tested.status).toBe(200);
    const result = (await tested.json()) as { ok: boolean; message: string };
    expect(result.ok).toBe(false);
    expect(result.message).toContain("invalid_grant");
    expect(tokens.requests).toHaveLength(2);

    // The test did not touch what calls use: the cached token serves on.
    expect((await geminiCall("kt-model")).status).toBe(200);
    expect(vertex.requests.at(-1)!.headers.get("authorization")).toBe("Bearer ya29.first");

    // Once the account works again, the test says so, and its fresh token serves calls.
    refused = false;
    minted = "ya29.second";
    const again = (await (await router.fetch(`/x-keys/${id}/test`, { method: "POST" })).json()) as { ok: boolean };
    expect(again.ok).toBe(true);
    expect((await geminiCall("kt-model")).status).toBe(200);
    expect(vertex.requests.at(-1)!.headers.get("authorization")).toBe("Bearer ya29.second");
  });
});

describe("Gemini embeddings on a Vertex key", () => {
  const vertexKey = (level: number, name: string) =>
    addKey(router, {
      provider: "https://aiplatform.googleapis.com",
      level,
      name,
      secret: serviceAccount(`${tokens.url}/token`),
      config: { provider_type: "vertex", location: "us-east5", base_url: vertex.url },
    });

  test("are refused in Gemini's envelope with the reason, nothing sent upstream", async () => {
    await vertexKey(4, "emb");
    tokens.route("POST", "/token", () => json({ access_token: "ya29.emb", expires_in: 3600, token_type: "Bearer" }));
    const client = geminiClient(router.url, router.ownerKey);
    const refused = await client.models.embedContent({ model: "emb-model", contents: ["hi", "there"] }).then(
      () => undefined,
      (error: { status?: number; message: string }) => error,
    );
    expect(refused?.status).toBe(400);
    expect(refused?.message).toContain("Vertex AI keys do not serve Gemini embeddings");
    expect(JSON.parse(refused!.message).error.status).toBe("INVALID_ARGUMENT");
    expect(vertex.requests).toHaveLength(0);
    expect(tokens.requests).toHaveLength(0);
    // The key is not blamed: it stays awake for the calls it serves.
    expect(router.deps.pool.keysOf(4).every((key) => !key.sleeping)).toBe(true);
  });

  test("go to another key of the Level that serves them", async () => {
    const gemini = startMockUpstream();
    try {
      await vertexKey(5, "mix-vertex");
      await addKey(router, { provider: gemini.url, level: 5, name: "mix-gemini", secret: "gemini-upstream-key-0123456789", config: { provider_type: "standard", formats: ["gemini"] } });
      gemini.route("POST", /mix-model:batchEmbedContents$/, () => json({ embeddings: [{ values: [0.5, 0.25] }] }));
      const client = geminiClient(router.url, router.ownerKey);
      const answer = await client.models.embedContent({ model: "mix-model", contents: ["hi"] });
      expect(answer.embeddings?.[0]?.values).toEqual([0.5, 0.25]);
      expect(vertex.requests).toHaveLength(0);
    } finally {
      await gemini.stop();
    }
  });
});

describe("OpenAI calls a Vertex key has no endpoint for", () => {
  test("OpenAI embeddings on a Level of Vertex keys are refused with the reason, not 'try again later'", async () => {
    await addKey(router, {
      provider: "https://aiplatform.googleapis.com",
      level: 6,
      name: "oemb",
      secret: serviceAccount(`${tokens.url}/token`),
      config: { provider_type: "vertex", location: "us-east5", base_url: vertex.url },
    });
    await router.deps.settings.update({ LEVEL_MAPPER: "bad-*=2,kt-*=3,emb-*=4,mix-*=5,oemb-*=6" });
    const client = openaiClient(router.url, router.ownerKey);
    const refused = await client.embeddings.create({ model: "oemb-model", input: "hi" }).then(
      () => undefined,
      (error: { status?: number; message: string; type?: string }) => error,
    );
    expect(refused?.status).toBe(400);
    expect(refused?.type).toBe("invalid_request_error");
    expect(refused?.message).toContain("Vertex AI keys serve the OpenAI format only for chat completions");
    expect(vertex.requests).toHaveLength(0);
  });
});
