import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { addKey, usageRows } from "../helpers/keys.ts";
import { json, sse, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter, waitFor, type TestRouter } from "../helpers/router.ts";
import { anthropicClient, anthropicV0Client, geminiClient, geminiV3Client, openaiV7Client } from "../helpers/sdk.ts";

let router: TestRouter;
let standard: MockUpstream;
let azure: MockUpstream;
let vertex: MockUpstream;
let standardSecret: string;

const anthropicMessage = (model: string) => ({
  id: "msg_1",
  type: "message",
  role: "assistant",
  model,
  content: [{ type: "text", text: "Bonjour" }],
  stop_reason: "end_turn",
  stop_sequence: null,
  usage: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 100, cache_creation_input_tokens: 20 },
});

const anthropicStream = (model: string) => [
  ["message_start", { type: "message_start", message: { ...anthropicMessage(model), content: [], usage: { input_tokens: 11, output_tokens: 1, cache_read_input_tokens: 50, cache_creation_input_tokens: 0 } } }],
  ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
  ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Bon" } }],
  ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "jour" } }],
  ["content_block_stop", { type: "content_block_stop", index: 0 }],
  ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 4 } }],
  ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 9 } }],
  ["message_stop", { type: "message_stop" }],
] as Array<[string, unknown]>;

const geminiAnswer = (text: string, usage: Record<string, number>) => ({
  candidates: [{ content: { role: "model", parts: [{ text }] }, finishReason: "STOP", index: 0 }],
  usageMetadata: usage,
  modelVersion: "gemini-2.5-flash",
});

// Gemini (and OpenAI-compatible) model names go to Level 1 (standard), Azure to 2, Vertex to 3.
beforeAll(async () => {
  standard = startMockUpstream();
  azure = startMockUpstream();
  vertex = startMockUpstream();
  router = await startRouter();
  standardSecret = (await addKey(router, { provider: standard.url, level: 1 })).secret;
  await addKey(router, {
    provider: azure.url,
    level: 2,
    secret: "azure-secret-0123456789abcdef",
    config: { provider_type: "azure", deployments: { "gpt-4.1": "prod-gpt41" }, api_versions: { "gpt-4.1": "2024-10-21" } },
  });
  const { privateKey } = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
    publicKeyEncoding: { type: "spki", format: "pem" },
  });
  const serviceAccount = {
    type: "service_account",
    project_id: "proj-1",
    private_key_id: "kid1",
    private_key: privateKey,
    client_email: "router@proj-1.iam.gserviceaccount.com",
    token_uri: `${vertex.url}/token`,
  };
  await addKey(router, {
    provider: "https://aiplatform.googleapis.com",
    level: 3,
    secret: JSON.stringify(serviceAccount),
    config: { provider_type: "vertex", location: "us-east5", base_url: vertex.url },
  });
  await router.deps.settings.update({ LEVEL_MAPPER: "gpt-4.1=2,vertex-*=3,claude-vertex*=3" });
});
afterAll(async () => {
  await router.stop();
  await Promise.all([standard.stop(), azure.stop(), vertex.stop()]);
});
beforeEach(() => {
  standard.reset();
  azure.reset();
  vertex.reset();
});

describe("Anthropic family", () => {
  for (const [label, make] of [
    ["@anthropic-ai/sdk 1.x (Bearer)", anthropicClient],
    // Both majors share this call surface; the cast only unifies their TypeScript types.
    ["@anthropic-ai/sdk 0.x (x-api-key)", anthropicV0Client as unknown as typeof anthropicClient],
  ] as const) {
    test(`${label}: non-streaming and streaming messages, with cache usage metered`, async () => {
      standard.route("POST", "/v1/messages", (req) =>
        req.json.stream ? sse(anthropicStream(req.json.model)) : json(anthropicMessage(req.json.model)),
      );
      const client = make(router.url, router.ownerKey);
      const message = await client.messages.create({ model: "claude-sonnet-4-5", max_tokens: 50, messages: [{ role: "user", content: "Salut" }] });
      expect(message.content[0]).toMatchObject({ type: "text", text: "Bonjour" });
      const seen = standard.requests[0]!;
      // The client's own key header came in; the upstream got our provider key instead.
      expect(seen.headers.get("x-api-key")).toBe(standardSecret);
      expect(seen.headers.get("authorization")).toBeNull();
      // The client's API version header is forwarded as it sent it.
      expect(seen.headers.get("anthropic-version")).toMatch(/^\d{4}-\d{2}-\d{2}$/);

      const stream = client.messages.stream({ model: "claude-sonnet-4-5", max_tokens: 50, messages: [{ role: "user", content: "Salut" }] });
      const text: string[] = [];
      stream.on("text", (t) => text.push(t));
      const final = await stream.finalMessage();
      expect(text.join("")).toBe("Bonjour");
      expect(final.usage.output_tokens).toBe(9);

      const rows = (await usageRows(router)).filter((r) => r.endpoint === "/v1/messages").slice(-2);
      // input_tokens excludes cache reads and writes: prompt = 10 + 100 + 20.
      expect(rows[0]).toMatchObject({ stream: 0, prompt_tokens: 130, cache_read_tokens: 100, cache_write_tokens: 20, completion_tokens: 5 });
      // message_delta usage is cumulative: the last one (9) counts, never the sum.
      await waitFor(async () => (await usageRows(router)).filter((r) => r.endpoint === "/v1/messages").length >= 2);
      expect((await usageRows(router)).filter((r) => r.endpoint === "/v1/messages").at(-1)).toMatchObject({
        stream: 1,
        prompt_tokens: 61,
        cache_read_tokens: 50,
        completion_tokens: 9,
        source: "upstream",
      });
    });
  }

  test("count_tokens is relayed", async () => {
    standard.route("POST", "/v1/messages/count_tokens", () => json({ input_tokens: 14 }));
    const client = anthropicClient(router.url, router.ownerKey);
    const result = await client.messages.countTokens({ model: "claude-sonnet-4-5", messages: [{ role: "user", content: "hi" }] });
    expect(result.input_tokens).toBe(14);
  });
});

describe("Gemini family", () => {
  for (const [label, make, prefix] of [
    ["@google/genai 2.x (/v1beta)", geminiClient, "/v1beta"],
    ["@google/genai 3.x (/v1)", geminiV3Client as unknown as typeof geminiClient, "/v1"],
  ] as const) {
    test(`${label}: generateContent and streamGenerateContent, thoughts counted as output`, async () => {
      standard.route("POST", new RegExp(`^${prefix}/models/gemini-2\\.5-flash:generateContent$`), () =>
        json(geminiAnswer("Hallo", { promptTokenCount: 20, candidatesTokenCount: 5, thoughtsTokenCount: 7, cachedContentTokenCount: 8, totalTokenCount: 32 })),
      );
      standard.route("POST", new RegExp(`^${prefix}/models/gemini-2\\.5-flash:streamGenerateContent$`), () =>
        sse([
          geminiAnswer("Hal", { promptTokenCount: 20, candidatesTokenCount: 1, totalTokenCount: 21 }),
          geminiAnswer("lo", { promptTokenCount: 20, candidatesTokenCount: 3, thoughtsTokenCount: 4, totalTokenCount: 27 }),
        ]),
      );
      const client = make(router.url, router.ownerKey);
      const result = await client.models.generateContent({ model: "gemini-2.5-flash", contents: "Hi" });
      expect(result.text).toBe("Hallo");
      expect(standard.requests[0]!.headers.get("x-goog-api-key")).toBe(standardSecret);
      expect(standard.requests[0]!.query.get("key")).toBeNull();

      const parts: string[] = [];
      for await (const chunk of await client.models.generateContentStream({ model: "gemini-2.5-flash", contents: "Hi" })) {
        parts.push(chunk.text ?? "");
      }
      expect(parts.join("")).toBe("Hallo");
      expect(standard.requests[1]!.query.get("alt")).toBe("sse");

      await waitFor(async () => (await usageRows(router)).filter((r) => r.endpoint.startsWith(prefix + "/models")).length >= 2);
      const rows = (await usageRows(router)).filter((r) => r.endpoint.startsWith(prefix + "/models")).slice(-2);
      expect(rows[0]).toMatchObject({ prompt_tokens: 20, completion_tokens: 12, reasoning_tokens: 7, cache_read_tokens: 8 });
      expect(rows[1]).toMatchObject({ stream: 1, prompt_tokens: 20, completion_tokens: 7, reasoning_tokens: 4 });
    });
  }
});

describe("Azure OpenAI keys", () => {
  test("deployment URL, api-version and api-key header, for openai 7.x", async () => {
    azure.route("POST", "/openai/deployments/prod-gpt41/chat/completions", (req) =>
      json({ id: "x", object: "chat.completion", created: 1, model: req.json.model, choices: [{ index: 0, message: { role: "assistant", content: "azure" }, finish_reason: "stop" }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }),
    );
    const client = openaiV7Client(router.url, router.ownerKey);
    const result = await client.chat.completions.create({ model: "gpt-4.1", messages: [{ role: "user", content: "hi" }] });
    expect(result.choices[0]!.message.content).toBe("azure");
    const seen = azure.requests[0]!;
    expect(seen.query.get("api-version")).toBe("2024-10-21");
    expect(seen.headers.get("api-key")).toBe("azure-secret-0123456789abcdef");
    expect(seen.headers.get("authorization")).toBeNull();
  });

  test("responses go to /openai/responses", async () => {
    azure.route("POST", "/openai/responses", () =>
      json({ id: "resp_1", object: "response", model: "gpt-4.1", output: [], usage: { input_tokens: 3, output_tokens: 2, total_tokens: 5 } }),
    );
    const res = await router.fetch("/v1/responses", { method: "POST", body: JSON.stringify({ model: "gpt-4.1", input: "hi" }) });
    expect(res.status).toBe(200);
    expect(azure.requests[0]!.path).toBe("/openai/responses");
  });
});

describe("Vertex AI keys", () => {
  const tokens: string[] = [];
  beforeEach(() => {
    vertex.route("POST", "/token", (req) => {
      const assertion = new URLSearchParams(req.body).get("assertion") ?? "";
      const claims = JSON.parse(Buffer.from(assertion.split(".")[1]!, "base64url").toString());
      expect(claims.iss).toBe("router@proj-1.iam.gserviceaccount.com");
      expect(claims.aud).toBe(`${vertex.url}/token`);
      const token = `ya29.token-${tokens.length + 1}`;
      tokens.push(token);
      return json({ access_token: token, expires_in: 3600, token_type: "Bearer" });
    });
  });

  test("Gemini calls go to the publisher path with an exchanged access token, cached across calls", async () => {
    vertex.route("POST", /\/publishers\/google\/models\/vertex-gemini:generateContent$/, () =>
      json(geminiAnswer("vx", { promptTokenCount: 2, candidatesTokenCount: 1, totalTokenCount: 3 })),
    );
    const client = geminiClient(router.url, router.ownerKey);
    expect((await client.models.generateContent({ model: "vertex-gemini", contents: "Hi" })).text).toBe("vx");
    expect((await client.models.generateContent({ model: "vertex-gemini", contents: "Hi" })).text).toBe("vx");
    const calls = vertex.requests.filter((r) => r.path !== "/token");
    expect(calls[0]!.path).toBe("/v1/projects/proj-1/locations/us-east5/publishers/google/models/vertex-gemini:generateContent");
    expect(calls[0]!.headers.get("authorization")).toBe(`Bearer ${tokens[0]}`);
    expect(calls[1]!.headers.get("authorization")).toBe(`Bearer ${tokens[0]}`);
    expect(vertex.requests.filter((r) => r.path === "/token")).toHaveLength(tokens.length);
  });

  test("Anthropic calls use rawPredict with anthropic_version in the body and no model", async () => {
    vertex.route("POST", /\/publishers\/anthropic\/models\/claude-vertex-1:streamRawPredict$/, () => sse(anthropicStream("claude-vertex-1")));
    const client = anthropicClient(router.url, router.ownerKey);
    const final = await client.messages.stream({ model: "claude-vertex-1", max_tokens: 5, messages: [{ role: "user", content: "x" }] }).finalMessage();
    expect(final.usage.output_tokens).toBe(9);
    const call = vertex.requests.find((r) => r.path.includes("anthropic"))!;
    expect(call.json.anthropic_version).toBe("vertex-2023-10-16");
    expect(call.json.model).toBeUndefined();
    expect(call.headers.get("anthropic-version")).toBeNull();
  });

  test("OpenAI chat goes to Vertex's OpenAI-compatible endpoint with a publisher-prefixed model", async () => {
    vertex.route("POST", "/v1/projects/proj-1/locations/us-east5/endpoints/openapi/chat/completions", (req) =>
      json({ id: "x", object: "chat.completion", created: 1, model: req.json.model, choices: [{ index: 0, message: { role: "assistant", content: "vx-chat" }, finish_reason: "stop" }], usage: { prompt_tokens: 2, completion_tokens: 1, total_tokens: 3 } }),
    );
    const client = openaiV7Client(router.url, router.ownerKey);
    const result = await client.chat.completions.create({ model: "vertex-chat", messages: [{ role: "user", content: "hi" }] });
    expect(result.choices[0]!.message.content).toBe("vx-chat");
    const call = vertex.requests.find((r) => r.path.endsWith("/chat/completions"))!;
    expect(call.json.model).toBe("google/vertex-chat");
    expect(call.headers.get("authorization")).toMatch(/^Bearer ya29\.token-/);
  });

  test("an expired token (401) is refreshed once and the call succeeds on the same key", async () => {
    let first = true;
    vertex.route("POST", /vertex-retry:generateContent$/, () => {
      if (first) {
        first = false;
        return json({ error: { code: 401, message: "token expired", status: "UNAUTHENTICATED" } }, 401);
      }
      return json(geminiAnswer("ok", { promptTokenCount: 1, candidatesTokenCount: 1, totalTokenCount: 2 }));
    });
    const before = tokens.length;
    const client = geminiClient(router.url, router.ownerKey);
    expect((await client.models.generateContent({ model: "vertex-retry", contents: "Hi" })).text).toBe("ok");
    expect(tokens.length).toBe(before + 1);
    expect(router.deps.pool.keysOf(3)[0]!.sleeping).toBe(false);
  });

  test("a 400 echoing the access token the router minted (not the key's secret) reaches the client without it", async () => {
    vertex.route("POST", /\/publishers\/google\/models\/vertex-gemini:generateContent$/, (req) =>
      json({ error: { code: 400, message: `Request had an invalid credential ${(req.headers.get("authorization") ?? "").replace(/^Bearer /, "")} for this method`, status: "INVALID_ARGUMENT" } }, 400),
    );
    const res = await fetch(`${router.url}/v1beta/models/vertex-gemini:generateContent`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-goog-api-key": router.ownerKey },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }),
    });
    const sent = (vertex.requests.findLast((q) => q.path.endsWith(":generateContent"))?.headers.get("authorization") ?? "").replace(/^Bearer /, "");
    expect(sent).toMatch(/^ya29\./);
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(text).toContain("invalid credential [redacted]");
    expect(text).not.toContain(sent);
  });
});
