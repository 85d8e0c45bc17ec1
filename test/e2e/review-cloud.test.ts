import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import { generateKeyPairSync } from "node:crypto";
import { addKey, usageRows } from "../helpers/keys.ts";
import { json, sse, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter, waitFor, type TestRouter } from "../helpers/router.ts";
import { anthropicClient, geminiClient, openaiClient } from "../helpers/sdk.ts";

/**
 * What Azure OpenAI and Vertex AI do differently from a standard upstream, as their
 * real services answer: Vertex's token endpoint (refused, slow), Azure's deployments.
 * Models: az-* on Azure keys (Level 2), vx-* and claude-vx* on Vertex keys (Level 3), tok-* on a
 * Vertex key of its own whose token endpoint each test scripts (Level 4), rot-* on a
 * Vertex key a test adds and edits (Level 5), v1-* on an Azure key set up with the
 * resource's v1 API URL (Level 6), herd-* on a Vertex key with a token endpoint of its
 * own (Level 7), old-* on an Azure key pinned to an api-version of mid-2024 (Level 8).
 */
let router: TestRouter;
let azure: MockUpstream;
let azure2: MockUpstream;
let vertex: MockUpstream;
let tokens: MockUpstream;
let azureV1: MockUpstream;
let tokenKeyId = 0;

function serviceAccount(tokenUri: string): string {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048, privateKeyEncoding: { type: "pkcs8", format: "pem" }, publicKeyEncoding: { type: "spki", format: "pem" } });
  return JSON.stringify({ type: "service_account", project_id: "proj-1", private_key: privateKey, client_email: "router@proj-1.iam.gserviceaccount.com", token_uri: tokenUri });
}

const geminiAnswer = (text: string) => ({
  candidates: [{ content: { role: "model", parts: [{ text }] }, finishReason: "STOP", index: 0 }],
  usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 2, totalTokenCount: 5 },
});

const geminiCall = (model: string) =>
  router.fetch(`/v1beta/models/${model}:generateContent`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }) });

const requestRecord = (id: string) =>
  waitFor(async () => {
    const res = await router.fetch(`/x-requests/${id}`);
    return res.status === 200 ? ((await res.json()) as any) : undefined;
  });

const keyOf = (id: number) => [2, 3, 4, 5, 6, 7, 8].flatMap((level) => router.deps.pool.keysOf(level)).find((k) => k.id === id)!;

beforeAll(async () => {
  azure = startMockUpstream();
  azure2 = startMockUpstream();
  vertex = startMockUpstream();
  tokens = startMockUpstream();
  azureV1 = startMockUpstream();
  router = await startRouter({ config: { firstByteTimeoutMs: 1500 } });
  await addKey(router, { provider: azure.url, level: 2, name: "az-a", secret: "azure-secret-a-0123456789abcdef", config: { provider_type: "azure", deployments: { "az-model": "dep-a" } } });
  await addKey(router, { provider: azure2.url, level: 2, name: "az-b", secret: "azure-secret-b-0123456789abcdef", config: { provider_type: "azure", deployments: { "az-model": "dep-b" } } });
  await addKey(router, {
    provider: "https://aiplatform.googleapis.com",
    level: 3,
    name: "vx",
    secret: serviceAccount(`${vertex.url}/token`),
    config: { provider_type: "vertex", location: "us-east5", base_url: vertex.url },
  });
  await addKey(router, {
    provider: "https://aiplatform.googleapis.com",
    level: 3,
    name: "vx-eu",
    secret: serviceAccount(`${vertex.url}/token`),
    config: { provider_type: "vertex", location: "europe-west4", base_url: vertex.url },
  });
  await addKey(router, {
    provider: `${azureV1.url}/openai/v1`,
    level: 6,
    name: "az-v1",
    secret: "azure-secret-v1-0123456789abcdef",
    config: { provider_type: "azure", deployments: { "v1-model": "dep-v1" } },
  });
  await addKey(router, {
    provider: "https://aiplatform.googleapis.com",
    level: 7,
    name: "herd",
    secret: serviceAccount(`${tokens.url}/herd-token`),
    config: { provider_type: "vertex", location: "us-east5", base_url: vertex.url },
  });
  await addKey(router, {
    provider: azure.url,
    level: 8,
    name: "az-old",
    secret: "azure-secret-old-0123456789abcdef",
    config: { provider_type: "azure", deployments: { "old-model": "dep-old" }, api_versions: { "old-model": "2024-06-01" } },
  });
  tokenKeyId = (
    await addKey(router, {
      provider: "https://aiplatform.googleapis.com",
      level: 4,
      name: "tok",
      secret: serviceAccount(`${tokens.url}/token`),
      config: { provider_type: "vertex", location: "us-east5", base_url: vertex.url },
    })
  ).id;
  await router.deps.settings.update({ LEVEL_MAPPER: "az-*=2,vx-*=3,claude-vx*=3,tok-*=4,rot-*=5,v1-*=6,herd-*=7,old-*=8" });
});
afterAll(async () => {
  await router.stop();
  await Promise.all([azure.stop(), azure2.stop(), vertex.stop(), tokens.stop(), azureV1.stop()]);
});
beforeEach(async () => {
  for (const mock of [azure, azure2, vertex, tokens, azureV1]) mock.reset();
  vertex.route("POST", "/token", () => json({ access_token: "ya29.vertex-token", expires_in: 3600, token_type: "Bearer" }));
  for (const level of [2, 3, 4, 5, 6, 7, 8]) for (const key of router.deps.pool.keysOf(level)) if (key.sleeping) await router.deps.pool.setManualSleep(key.id, false);
});

describe("Vertex token endpoint", () => {
  test("a token endpoint refusing the service account (invalid_grant) puts the key to sleep as a dead credential, asked once, not retried on it", async () => {
    // Google's answer for a service-account key that was deleted or rotated.
    tokens.route("POST", "/token", () => json({ error: "invalid_grant", error_description: "Invalid JWT Signature." }, 400));
    vertex.route("POST", /tok-model:generateContent$/, () => json(geminiAnswer("never")));
    const res = await geminiCall("tok-model");
    expect(res.status).toBe(502);
    const body = (await res.json()) as { error: { message: string } };
    expect(body.error.message).toContain("refused the provider key");
    // Asking again with the same refused assertion cannot help: one exchange, no model call.
    expect(tokens.requests).toHaveLength(1);
    expect(vertex.requests.filter((r) => r.path.endsWith(":generateContent"))).toHaveLength(0);
    const key = keyOf(tokenKeyId);
    expect(key.sleeping).toBe(true);
    expect(key.sleepReason).toBe("auth");
    // The owner reads why in the request log: Google's words, never the assertion.
    const record = await requestRecord(res.headers.get("x-request-id")!);
    expect(record.attempts).toHaveLength(1);
    expect(record.attempts[0].message).toContain("invalid_grant: Invalid JWT Signature.");
  });

  test("a token endpoint that does not answer holds the call no longer than the first-byte limit", async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    tokens.route("POST", "/token", async () => {
      await held;
      return json({ access_token: "ya29.late", expires_in: 3600, token_type: "Bearer" });
    });
    const started = performance.now();
    const res = await geminiCall("tok-model");
    const waited = performance.now() - started;
    release();
    // --first-byte-timeout is 1.5 s here; the exchange's own bound is 30 s.
    expect(res.status).toBe(502);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain("did not answer in time");
    expect(waited).toBeLessThan(4000);
  }, 40_000);

  test("a key's token_uri changed through PUT /x-keys takes effect at once: the old endpoint gets no more assertions", async () => {
    const { id } = await addKey(router, {
      provider: "https://aiplatform.googleapis.com",
      level: 5,
      name: "rot",
      secret: serviceAccount(`${vertex.url}/token`),
      config: { provider_type: "vertex", location: "us-east5", base_url: vertex.url },
    });
    vertex.route("POST", /rot-model:generateContent$/, () => json(geminiAnswer("ok")));
    tokens.route("POST", "/token", () => json({ access_token: "ya29.from-new-endpoint", expires_in: 3600, token_type: "Bearer" }));
    expect((await geminiCall("rot-model")).status).toBe(200);
    expect(vertex.requests.filter((r) => r.path === "/token")).toHaveLength(1);

    // The owner moves the key to another token endpoint (a private one, say).
    const config = { provider_type: "vertex", location: "us-east5", base_url: vertex.url, token_uri: `${tokens.url}/token` };
    const put = await router.fetch(`/x-keys/${id}`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ config }) });
    expect(put.status).toBe(200);
    await router.deps.pool.reload();
    expect((await geminiCall("rot-model")).status).toBe(200);
    expect(tokens.requests).toHaveLength(1);
    expect(vertex.requests.filter((r) => r.path === "/token")).toHaveLength(1);
    expect(vertex.requests.at(-1)!.headers.get("authorization")).toBe("Bearer ya29.from-new-endpoint");
  });
});

describe("Vertex access token refresh", () => {
  test("calls that all find their access token revoked (401) share one fresh token, not one exchange each", async () => {
    let minted = 0;
    tokens.route("POST", "/herd-token", () => json({ access_token: `ya29.herd-${++minted}`, expires_in: 3600, token_type: "Bearer" }));
    const revoked = new Set<string>();
    vertex.route("POST", /herd-model:generateContent$/, async (req) => {
      const token = (req.headers.get("authorization") ?? "").replace(/^Bearer /, "");
      // The 401s come back together, as they do when Google revokes a token under load.
      await Bun.sleep(50);
      return revoked.has(token) ? json({ error: { code: 401, message: "Request had invalid authentication credentials.", status: "UNAUTHENTICATED" } }, 401) : json(geminiAnswer("ok"));
    });
    expect((await geminiCall("herd-model")).status).toBe(200);
    expect(minted).toBe(1);
    revoked.add("ya29.herd-1");
    const answers = await Promise.all(Array.from({ length: 5 }, () => geminiCall("herd-model")));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(minted).toBe(2);
  });
});

describe("Azure deployments", () => {
  const deploymentNotFound = () =>
    json({ error: { code: "DeploymentNotFound", message: "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again." } }, 404);
  const chatAnswer = (content: string) =>
    json({ id: "chatcmpl-1", object: "chat.completion", created: 1, model: "gpt-4o-2024-11-20", choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }], usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } });

  test("a key whose resource lacks the model's deployment (404 DeploymentNotFound) hands the call to another key, without being put to sleep", async () => {
    azure.route("POST", "/openai/deployments/dep-a/chat/completions", deploymentNotFound);
    azure2.route("POST", "/openai/deployments/dep-b/chat/completions", () => chatAnswer("from b"));
    const client = openaiClient(router.url, router.ownerKey);
    // Keys alike are taken in turn: of two calls, one starts on the key without the deployment.
    for (let i = 0; i < 2; i++) {
      const answer = await client.chat.completions.create({ model: "az-model", messages: [{ role: "user", content: "hi" }] });
      expect(answer.choices[0]!.message.content).toBe("from b");
    }
    expect(azure.requests.length).toBeGreaterThanOrEqual(1);
    // The deployment is missing for this model only: the key keeps serving its others.
    expect(router.deps.pool.keysOf(2).every((key) => !key.sleeping)).toBe(true);
  });

  test("when no key has the deployment, the client gets Azure's 404 as it was, and the request log shows every key's answer", async () => {
    azure.route("POST", "/openai/deployments/dep-a/chat/completions", deploymentNotFound);
    azure2.route("POST", "/openai/deployments/dep-b/chat/completions", deploymentNotFound);
    const res = await router.fetch("/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "az-model", messages: [{ role: "user", content: "hi" }] }) });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("DeploymentNotFound");
    const record = await requestRecord(res.headers.get("x-request-id")!);
    expect(record.attempts).toHaveLength(2);
    for (const attempt of record.attempts) expect(attempt).toMatchObject({ status: 404, message: expect.stringContaining("DeploymentNotFound") });
    expect(router.deps.pool.keysOf(2).every((key) => !key.sleeping)).toBe(true);
  });
});

describe("Vertex models by location", () => {
  test("a location without the model (404 Publisher Model not found) hands the call to a key in another location", async () => {
    vertex.route("POST", "/v1/projects/proj-1/locations/us-east5/publishers/google/models/vx-regional:generateContent", () =>
      json({ error: { code: 404, message: "Publisher Model `projects/proj-1/locations/us-east5/publishers/google/models/vx-regional` was not found or your project does not have access to it. Please ensure you are using a valid model version.", status: "NOT_FOUND" } }, 404),
    );
    vertex.route("POST", "/v1/projects/proj-1/locations/europe-west4/publishers/google/models/vx-regional:generateContent", () => json(geminiAnswer("from europe")));
    const client = geminiClient(router.url, router.ownerKey);
    for (let i = 0; i < 2; i++) expect((await client.models.generateContent({ model: "vx-regional", contents: "hi" })).text).toBe("from europe");
    expect(vertex.requests.some((r) => r.path.includes("/locations/us-east5/"))).toBe(true);
    expect(router.deps.pool.keysOf(3).every((key) => !key.sleeping)).toBe(true);
  });
});

describe("Azure deployments, on a call bound to its key", () => {
  test("a Responses follow-up bound to the key holding its previous response gets that key's DeploymentNotFound, not 'key gone'", async () => {
    let n = 0;
    const answer = (req: { json: { model: string } }) =>
      json({ id: `resp_bound_${++n}`, object: "response", created_at: 1, status: "completed", model: req.json.model, output: [{ type: "message", id: "m1", status: "completed", role: "assistant", content: [{ type: "output_text", text: "first", annotations: [] }] }], usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 } });
    azure.route("POST", "/openai/responses", answer);
    azure2.route("POST", "/openai/responses", answer);
    const client = openaiClient(router.url, router.ownerKey);
    const first = await client.responses.create({ model: "az-model", input: "hi" });
    const holder = azure.requests.length === 1 ? azure : azure2;
    const other = holder === azure ? azure2 : azure;
    // The follow-up names a model the holder's resource has no deployment for.
    holder.reset();
    holder.route("POST", "/openai/responses", () => json({ error: { code: "DeploymentNotFound", message: "The API deployment for this resource does not exist." } }, 404));
    const failure = await client.responses.create({ model: "az-model", input: "more", previous_response_id: first.id }).catch((e: unknown) => e);
    expect((failure as { status?: number }).status).toBe(404);
    expect((failure as { code?: string }).code).toBe("DeploymentNotFound");
    // The previous response lives on the holder only: the follow-up never goes elsewhere.
    expect(other.requests).toHaveLength(0);
  });
});

describe("Azure content filtering", () => {
  test("a stream opened by Azure's prompt_filter_results chunk (no choices) is relayed, translated and charged once from its usage", async () => {
    const chunk = (extra: Record<string, unknown>) => ({ id: "c1", object: "chat.completion.chunk", created: 1, model: "gpt-4o-2024-11-20", usage: null, ...extra });
    const events = [
      { id: "", object: "", created: 0, model: "", choices: [], prompt_filter_results: [{ prompt_index: 0, content_filter_results: { hate: { filtered: false, severity: "safe" } } }] },
      chunk({ choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null, content_filter_results: {} }] }),
      chunk({ choices: [{ index: 0, delta: { content: "Hello" }, finish_reason: null, content_filter_results: { hate: { filtered: false, severity: "safe" } } }] }),
      chunk({ choices: [{ index: 0, delta: {}, finish_reason: "stop", content_filter_results: {} }] }),
      chunk({ choices: [], usage: { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 } }),
      "[DONE]",
    ];
    for (const mock of [azure, azure2]) mock.route("POST", /chat\/completions$/, () => sse(events as never));
    const before = (await usageRows(router)).length;
    let text = "";
    for await (const part of await openaiClient(router.url, router.ownerKey).chat.completions.create({ model: "az-model", stream: true, messages: [{ role: "user", content: "hi" }] })) {
      text += part.choices[0]?.delta?.content ?? "";
    }
    expect(text).toBe("Hello");
    const final = await anthropicClient(router.url, router.ownerKey).messages.stream({ model: "az-model", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }).finalMessage();
    expect(final.content).toEqual([expect.objectContaining({ type: "text", text: "Hello" })]);
    expect(final.usage).toMatchObject({ input_tokens: 12, output_tokens: 4 });
    await waitFor(async () => (await usageRows(router)).length >= before + 2);
    const rows = (await usageRows(router)).slice(before);
    expect(rows).toHaveLength(2);
    for (const row of rows) expect(row).toMatchObject({ prompt_tokens: 12, completion_tokens: 4, source: "upstream", status: 200 });
  });
});

describe("Azure api-versions without stream_options", () => {
  test("a stream on an api-version that refuses stream_options (2024-06-01) is sent without the usage option the router would add, and charged as an estimate", async () => {
    const chunk = (delta: Record<string, unknown>, finish: string | null) => ({ id: "c1", object: "chat.completion.chunk", created: 1, model: "gpt-4o", choices: [{ index: 0, delta, finish_reason: finish }] });
    azure.route("POST", "/openai/deployments/dep-old/chat/completions", (req) =>
      req.json.stream_options !== undefined
        ? json({ error: { message: "Unrecognized request argument supplied: stream_options", type: "invalid_request_error", param: null, code: null } }, 400)
        : sse([chunk({ role: "assistant", content: "Hel" }, null), chunk({ content: "lo" }, null), chunk({}, "stop"), "[DONE]"] as never),
    );
    const before = (await usageRows(router)).length;
    let text = "";
    for await (const part of await openaiClient(router.url, router.ownerKey).chat.completions.create({ model: "old-model", stream: true, messages: [{ role: "user", content: "hi" }] })) {
      text += part.choices[0]?.delta?.content ?? "";
    }
    expect(text).toBe("Hello");
    const final = await anthropicClient(router.url, router.ownerKey).messages.stream({ model: "old-model", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }).finalMessage();
    expect(final.content).toEqual([expect.objectContaining({ type: "text", text: "Hello" })]);
    for (const seen of azure.requests) {
      expect(seen.query.get("api-version")).toBe("2024-06-01");
      expect(seen.json.stream_options).toBeUndefined();
    }
    // No usage came: each call is charged once, from the router's estimate, marked as one.
    await waitFor(async () => (await usageRows(router)).length >= before + 2);
    const rows = (await usageRows(router)).slice(before);
    expect(rows).toHaveLength(2);
    for (const row of rows) expect(row).toMatchObject({ status: 200, source: "estimated" });
  });
});

describe("Azure api-versions without max_completion_tokens", () => {
  test("an Anthropic client's call translated for an api-version before 2024-09-01 names its limit max_tokens, which that version knows", async () => {
    azure.route("POST", "/openai/deployments/dep-old/chat/completions", (req) =>
      req.json.max_completion_tokens !== undefined
        ? json({ error: { message: "Unrecognized request argument supplied: max_completion_tokens", type: "invalid_request_error", param: null, code: null } }, 400)
        : json({ id: "c1", object: "chat.completion", created: 1, model: "gpt-4o", choices: [{ index: 0, message: { role: "assistant", content: "Bonjour" }, finish_reason: "stop" }], usage: { prompt_tokens: 6, completion_tokens: 2, total_tokens: 8 } }),
    );
    const message = await anthropicClient(router.url, router.ownerKey).messages.create({ model: "old-model", max_tokens: 10, messages: [{ role: "user", content: "Salut" }] });
    expect(message.content).toEqual([expect.objectContaining({ type: "text", text: "Bonjour" })]);
    expect(message.usage).toMatchObject({ input_tokens: 6, output_tokens: 2 });
    expect(azure.requests).toHaveLength(1);
    expect(azure.requests[0]!.json.max_tokens).toBe(10);
  });
});

describe("Azure Responses", () => {
  test("a Responses call names the deployment in its body, as Azure's /openai/responses expects", async () => {
    const answer = (req: { json: { model: string } }) =>
      json({ id: "resp_1", object: "response", created_at: 1, status: "completed", model: req.json.model, output: [{ type: "message", id: "m1", status: "completed", role: "assistant", content: [{ type: "output_text", text: `from ${req.json.model}`, annotations: [] }] }], usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 } });
    azure.route("POST", "/openai/responses", answer);
    azure2.route("POST", "/openai/responses", answer);
    const client = openaiClient(router.url, router.ownerKey);
    const response = await client.responses.create({ model: "az-model", input: "hi" });
    // Each key maps az-model to its own deployment (dep-a, dep-b).
    expect(response.output_text).toMatch(/^from dep-[ab]$/);
    const seen = [...azure.requests, ...azure2.requests];
    expect(seen).toHaveLength(1);
    expect(seen[0]!.json.model).toMatch(/^dep-[ab]$/);
  });
});

describe("Azure's v1 API", () => {
  test("a key whose Provider is the resource's /openai/v1 URL calls the v1 paths, with the deployment as the body's model and no dated api-version", async () => {
    azureV1.route("POST", "/openai/v1/chat/completions", (req) =>
      json({ id: "chatcmpl-1", object: "chat.completion", created: 1, model: "gpt-4o-2024-11-20", choices: [{ index: 0, message: { role: "assistant", content: `v1 ${req.json.model}` }, finish_reason: "stop" }], usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } }),
    );
    azureV1.route("POST", "/openai/v1/embeddings", () => json({ object: "list", model: "text-embedding-3-small", data: [{ object: "embedding", index: 0, embedding: [0.1, 0.2] }], usage: { prompt_tokens: 2, total_tokens: 2 } }));
    const client = openaiClient(router.url, router.ownerKey);
    const answer = await client.chat.completions.create({ model: "v1-model", messages: [{ role: "user", content: "hi" }] });
    expect(answer.choices[0]!.message.content).toBe("v1 dep-v1");
    const embedded = await client.embeddings.create({ model: "v1-model", input: "hi" });
    expect(embedded.data).toHaveLength(1);
    for (const seen of azureV1.requests) {
      expect(seen.headers.get("api-key")).toBe("azure-secret-v1-0123456789abcdef");
      expect(seen.query.get("api-version")).toBeNull();
      expect(seen.json.model).toBe("dep-v1");
    }
    expect(azureV1.requests.map((r) => r.path)).toEqual(["/openai/v1/chat/completions", "/openai/v1/embeddings"]);
  });

  test("the key test of such a key lists the v1 API's models, so a refused key is told as refused", async () => {
    azureV1.route("GET", "/openai/v1/models", () => json({ error: { code: "401", message: "Access denied due to invalid subscription key or wrong API endpoint." } }, 401));
    const id = router.deps.pool.keysOf(6)[0]!.id;
    const res = await router.fetch(`/x-keys/${id}/test`, { method: "POST" });
    expect(await res.json()).toMatchObject({ ok: false, status: 401 });
    expect(azureV1.requests.map((r) => r.path)).toEqual(["/openai/v1/models"]);
  });
});

describe("Claude on Vertex for OpenAI and Gemini clients", () => {
  const claudeAnswer = {
    id: "msg_1", type: "message", role: "assistant", model: "claude-vx-1", content: [{ type: "text", text: "Bonjour" }],
    stop_reason: "end_turn", stop_sequence: null, usage: { input_tokens: 9, output_tokens: 4 },
  };

  test("an OpenAI or Gemini client asking a Vertex key for a Claude model is carried to Anthropic's rawPredict, never to Google's model paths", async () => {
    vertex.route("POST", /\/publishers\/anthropic\/models\/claude-vx-1:rawPredict$/, () => json(claudeAnswer));
    const openai = openaiClient(router.url, router.ownerKey);
    const chat = await openai.chat.completions.create({ model: "claude-vx-1", messages: [{ role: "user", content: "Salut" }] });
    expect(chat.choices[0]!.message.content).toBe("Bonjour");
    const gemini = geminiClient(router.url, router.ownerKey);
    expect((await gemini.models.generateContent({ model: "claude-vx-1", contents: "Salut" })).text).toBe("Bonjour");
    const calls = vertex.requests.filter((r) => r.path !== "/token");
    // Vertex serves Claude only as an Anthropic publisher model: its OpenAI-compatible
    // endpoint and publishers/google paths know only Google's (and self-deployed) models.
    expect(calls.map((r) => r.path.replace(/^.*\/locations\/[^/]+/, ""))).toEqual([
      "/publishers/anthropic/models/claude-vx-1:rawPredict",
      "/publishers/anthropic/models/claude-vx-1:rawPredict",
    ]);
    await waitFor(async () => (await usageRows(router)).filter((r) => r.requested_model === "claude-vx-1").length >= 2);
    for (const row of (await usageRows(router)).filter((r) => r.requested_model === "claude-vx-1")) {
      expect(row).toMatchObject({ prompt_tokens: 9, completion_tokens: 4, source: "upstream" });
    }
  });
});

describe("Anthropic on Vertex: Vertex's own errors", () => {
  test("a 400 Vertex answers in Google's envelope reaches an Anthropic client in Anthropic's, with Vertex's words", async () => {
    const words = "Invalid JSON payload received. Unknown name \"bogus\": Cannot find field.";
    vertex.route("POST", /\/publishers\/anthropic\/models\/claude-vx-1:rawPredict$/, () => json({ error: { code: 400, message: words, status: "INVALID_ARGUMENT" } }, 400));
    const client = anthropicClient(router.url, router.ownerKey);
    const failure = await client.messages.create({ model: "claude-vx-1", max_tokens: 5, messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(Anthropic.BadRequestError);
    const error = failure as InstanceType<typeof Anthropic.BadRequestError>;
    expect(error.status).toBe(400);
    expect(error.error).toEqual({ type: "error", error: { type: "invalid_request_error", message: words } });
    // The client's mistake: relayed once, no other key tried, no key blamed.
    expect(vertex.requests.filter((r) => r.path.includes("rawPredict"))).toHaveLength(1);
    expect(router.deps.pool.keysOf(3).every((key) => !key.sleeping)).toBe(true);
  });
});
