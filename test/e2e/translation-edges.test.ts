import { beforeAll, describe, expect, test } from "bun:test";
import { KEY_FORMATS, keyPerFormat } from "../helpers/key-per-format.ts";
import type { KeyFormat } from "../../src/wire/constants.ts";
import { usageRows } from "../helpers/keys.ts";
import { sse } from "../helpers/mock-upstream.ts";
import { waitFor, type TestRouter } from "../helpers/router.ts";
import { decodeSse } from "../helpers/sse-transcripts.ts";
import { anthropicClient, geminiClient, openaiClient } from "../helpers/sdk.ts";

/**
 * Translated calls and streams at their edges (black box, local HTTPS upstreams, official
 * SDKs), from a review: Azure's prompt-filter first chunk failed before its fix; the
 * rest is what the review probed and found right.
 */

const FORMATS = KEY_FORMATS;
const pairs = keyPerFormat("rv");
const ups = pairs.ups;
let router: TestRouter;
beforeAll(() => {
  router = pairs.router;
});

const answerWith = (format: KeyFormat, answer: () => Response) => ups.get(format)!.route("POST", /.*/, answer);

/** A raw call in the client's format; returns the status, content type and decoded SSE events. */
async function rawStream(client: KeyFormat, upstream: KeyFormat, extra: Record<string, unknown> = {}) {
  const model = `rv-${upstream}`;
  const [path, body] =
    client === "openai" ? ["/v1/chat/completions", { model, stream: true, messages: [{ role: "user", content: "hi" }], ...extra }]
    : client === "responses" ? ["/v1/responses", { model, stream: true, input: "hi", ...extra }]
    : client === "anthropic" ? ["/v1/messages", { model, stream: true, max_tokens: 100, messages: [{ role: "user", content: "hi" }], ...extra }]
    : [`/v1beta/models/${model}:streamGenerateContent?alt=sse`, { contents: [{ role: "user", parts: [{ text: "hi" }] }], ...extra }];
  const response = await router.fetch(path as string, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const text = await response.text();
  return { status: response.status, type: response.headers.get("content-type") ?? "", text, events: decodeSse(text) };
}

const chatChunk = (delta: Record<string, unknown>, finish: string | null = null, id = "chatcmpl-rv", model = "gpt-rv") => ({ id, object: "chat.completion.chunk", created: 1, model, choices: [{ index: 0, delta, finish_reason: finish }] });
const chatUsage = (id = "chatcmpl-rv", model = "gpt-rv") => ({ id, object: "chat.completion.chunk", created: 1, model, choices: [], usage: { prompt_tokens: 50, completion_tokens: 7, total_tokens: 57, prompt_tokens_details: { cached_tokens: 30 } } });
const named = (data: Record<string, unknown>): [string, unknown] => [String(data.type), data];

/** Azure OpenAI's first stream chunk when content filtering is on (its documented streaming shape): no id, no model, no choices. */
const AZURE_PROMPT_FILTER_CHUNK = {
  choices: [],
  created: 0,
  id: "",
  model: "",
  object: "",
  prompt_filter_results: [{ prompt_index: 0, content_filter_results: { hate: { filtered: false, severity: "safe" }, self_harm: { filtered: false, severity: "safe" }, sexual: { filtered: false, severity: "safe" }, violence: { filtered: false, severity: "safe" } } }],
};
const azureStream = () =>
  sse([AZURE_PROMPT_FILTER_CHUNK, chatChunk({ role: "assistant", content: "" }, null, "chatcmpl-AZ1", "gpt-4o-2024-11-20"), chatChunk({ content: "Bonjour" }, null, "chatcmpl-AZ1", "gpt-4o-2024-11-20"), chatChunk({}, "stop", "chatcmpl-AZ1", "gpt-4o-2024-11-20"), chatUsage("chatcmpl-AZ1", "gpt-4o-2024-11-20")], { done: true });

describe("a Chat upstream whose first chunk is Azure's prompt-filter chunk: the answer's identity comes after it", () => {
  /**
   * Azure OpenAI (a key of provider_type `azure` speaks `openai`, `responses`) opens every
   * content-filtered stream with a chunk carrying `prompt_filter_results`, `choices: []`,
   * and an empty `id` and `model`; the real id and model come in the next chunks.
   * The Chat stream reader takes the answer's id and model from whatever chunk comes
   * first (src/formats/translate/codecs/chat/stream-read.ts:25-28, called at :73), so an
   * Anthropic client's `message_start` says `"id": "", "model": ""`. Anthropic's Message
   * object: `id` "Unique object identifier", `model` "The model that handled the request";
   * the SDK's `finalMessage()` returns them empty.
   */
  test("Anthropic client: the message's id and model are the upstream's, not empty", async () => {
    answerWith("openai", azureStream);
    const sdk = anthropicClient(router.url, router.ownerKey);
    const message = await sdk.messages.stream({ model: "rv-openai", max_tokens: 100, messages: [{ role: "user", content: "hi" }] }).finalMessage();
    expect(message.content.map((b) => (b.type === "text" ? b.text : b.type))).toEqual(["Bonjour"]);
    expect(message.id).toBe("chatcmpl-AZ1");
    expect(message.model).toBe("gpt-4o-2024-11-20");
  });

  /** Same root cause for a Gemini client: every chunk's `responseId` and `modelVersion` are "". */
  test("Gemini client: responseId and modelVersion are the upstream's, not empty", async () => {
    answerWith("openai", azureStream);
    const sdk = geminiClient(router.url, router.ownerKey);
    const seen: Array<{ responseId?: string; modelVersion?: string }> = [];
    let text = "";
    for await (const chunk of await sdk.models.generateContentStream({ model: "rv-openai", contents: "hi" })) {
      seen.push({ responseId: chunk.responseId, modelVersion: chunk.modelVersion });
      text += chunk.text ?? "";
    }
    expect(text).toBe("Bonjour");
    for (const s of seen) expect(s).toEqual({ responseId: "chatcmpl-AZ1", modelVersion: "gpt-4o-2024-11-20" });
  });

  /** And the Responses client's `response.model` (its id is replaced by a random one, so only the model is checked). */
  test("Responses client: response.model is the upstream's, not empty", async () => {
    answerWith("openai", azureStream);
    const sdk = openaiClient(router.url, router.ownerKey);
    const final = await sdk.responses.stream({ model: "rv-openai", input: "hi" }).finalResponse();
    expect(final.output_text).toBe("Bonjour");
    expect(final.model).toBe("gpt-4o-2024-11-20");
  });
});

// ——— Checked and found fine ———

describe("what the review probed and found right", () => {
  test("a multi-byte character cut between two upstream reads reaches every client whole", async () => {
    const encoder = new TextEncoder();
    const bytes = encoder.encode(
      [chatChunk({ role: "assistant", content: "" }), chatChunk({ content: "héllo 😀 wörld" }), chatChunk({}, "stop"), chatUsage()].map((c) => `data: ${JSON.stringify(c)}\n\n`).join("") + "data: [DONE]\n\n",
    );
    const cut = bytes.indexOf(0xf0) + 2;
    for (const client of ["anthropic", "responses", "gemini"] as const) {
      answerWith("openai", () => new Response(new ReadableStream({ async start(c) { c.enqueue(bytes.slice(0, cut)); await Bun.sleep(10); c.enqueue(bytes.slice(cut)); c.close(); } }), { headers: { "content-type": "text/event-stream" } }));
      const { text } = await rawStream(client, "openai");
      expect(text).toContain("héllo 😀 wörld");
      expect(text).not.toContain("\ufffd");
      ups.get("openai")!.reset();
    }
  });

  test("a very long single event (3 MB of text) is translated whole", async () => {
    const big = `${"x".repeat(3_000_000)}é`;
    for (const client of ["anthropic", "gemini"] as const) {
      answerWith("openai", () => sse([chatChunk({ role: "assistant", content: "" }), chatChunk({ content: big }), chatChunk({}, "stop"), chatUsage()], { done: true }));
      const { status, text } = await rawStream(client, "openai");
      expect(status).toBe(200);
      expect(text).toContain(big);
      ups.get("openai")!.reset();
    }
  });

  test("Chat client: the usage chunk only when stream_options.include_usage is asked; [DONE] last; event-stream content type", async () => {
    const anthropicText = () =>
      sse([
        named({ type: "message_start", message: { id: "msg_rv", type: "message", role: "assistant", model: "claude-rv", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, cache_read_input_tokens: 30, cache_creation_input_tokens: 20, output_tokens: 1 } } }),
        named({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
        named({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hi" } }),
        named({ type: "content_block_stop", index: 0 }),
        named({ type: "message_delta", delta: { stop_reason: "stop_sequence", stop_sequence: "END" }, usage: { output_tokens: 9 } }),
        named({ type: "message_stop" }),
      ]);
    answerWith("anthropic", anthropicText);
    const without = await rawStream("openai", "anthropic");
    expect(without.type).toContain("text/event-stream");
    expect(without.events.some((e) => typeof e.data === "object" && (e.data as any).usage)).toBe(false);
    expect(without.events.at(-1)!.data).toBe("[DONE]");
    const withUsage = await rawStream("openai", "anthropic", { stream_options: { include_usage: true } });
    const usage = withUsage.events.find((e) => typeof e.data === "object" && (e.data as any).usage)!.data as any;
    // Anthropic's input_tokens (10) + cache read (30) + cache write (20); stop_sequence is Chat's "stop".
    expect(usage.usage).toMatchObject({ prompt_tokens: 60, completion_tokens: 9, prompt_tokens_details: { cached_tokens: 30, cache_write_tokens: 20 } });
    expect(withUsage.events.map((e) => (e.data as any)?.choices?.[0]?.finish_reason).filter(Boolean)).toEqual(["stop"]);
    expect(withUsage.events.at(-1)!.data).toBe("[DONE]");
  });

  test("a Gemini upstream's parallel calls in one chunk, after text: distinct ids, own indices, metered on Gemini's usage", async () => {
    const before = (await usageRows(router)).length;
    answerWith("gemini", () =>
      sse([
        { candidates: [{ content: { role: "model", parts: [{ text: "Let me check" }] }, index: 0 }], responseId: "g1", modelVersion: "gemini-rv", usageMetadata: { promptTokenCount: 40, candidatesTokenCount: 3, totalTokenCount: 43 } },
        { candidates: [{ content: { role: "model", parts: [{ functionCall: { name: "weather", args: { city: "Paris" } } }, { functionCall: { name: "weather", args: { city: "Oslo" } } }] }, index: 0 }], responseId: "g1", modelVersion: "gemini-rv" },
        { candidates: [{ content: { role: "model", parts: [{ text: "" }] }, finishReason: "STOP", index: 0 }], responseId: "g1", modelVersion: "gemini-rv", usageMetadata: { promptTokenCount: 40, candidatesTokenCount: 12, thoughtsTokenCount: 5, totalTokenCount: 57 } },
      ]),
    );
    const sdk = openaiClient(router.url, router.ownerKey);
    const final = await sdk.chat.completions.stream({ model: "rv-gemini", messages: [{ role: "user", content: "hi" }], stream_options: { include_usage: true } }).finalChatCompletion();
    const choice = final.choices[0]!;
    expect(choice.finish_reason).toBe("tool_calls");
    expect(choice.message.content).toBe("Let me check");
    const calls = (choice.message.tool_calls ?? []) as Array<{ id: string; function: { name: string; arguments: string } }>;
    expect(calls.map((c) => JSON.parse(c.function.arguments))).toEqual([{ city: "Paris" }, { city: "Oslo" }]);
    expect(new Set(calls.map((c) => c.id)).size).toBe(2);
    expect(final.usage).toMatchObject({ prompt_tokens: 40, completion_tokens: 17, completion_tokens_details: { reasoning_tokens: 5 } });
    const rows = await waitFor(async () => {
      const all = (await usageRows(router)).slice(before);
      return all.length > 0 ? all : undefined;
    });
    expect(rows![0]).toMatchObject({ prompt_tokens: 40, completion_tokens: 17 });
  });

  test("an upstream error event mid-stream ends every client's stream in its own family's shape", async () => {
    const failing: Record<KeyFormat, () => Response> = {
      openai: () => sse([chatChunk({ role: "assistant", content: "" }), chatChunk({ content: "Hi" }), { error: { message: "boom", type: "server_error", code: "server_error" } }]),
      anthropic: () => sse([named({ type: "message_start", message: { id: "msg_rv", type: "message", role: "assistant", model: "m", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 5, output_tokens: 1 } } }), named({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }), named({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hi" } }), named({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } })]),
      responses: () => sse([named({ type: "response.created", sequence_number: 0, response: { id: "resp_rv", model: "m", status: "in_progress", output: [] } }), named({ type: "response.output_text.delta", sequence_number: 1, item_id: "msg_1", output_index: 0, content_index: 0, delta: "Hi" }), named({ type: "response.failed", sequence_number: 2, response: { id: "resp_rv", status: "failed", error: { code: "rate_limit_exceeded", message: "slow" } } })]),
      gemini: () => sse([{ candidates: [{ content: { role: "model", parts: [{ text: "Hi" }] }, index: 0 }], responseId: "g1", modelVersion: "m" }, { error: { code: 503, message: "overloaded", status: "UNAVAILABLE" } }]),
    };
    for (const upstream of FORMATS) {
      for (const client of FORMATS.filter((f) => f !== upstream)) {
        ups.get(upstream)!.reset();
        answerWith(upstream, failing[upstream]);
        const { events } = await rawStream(client, upstream);
        const last = events.at(-1)!;
        if (client === "openai") expect((last.data as any).error).toBeDefined();
        if (client === "anthropic") expect(last.event).toBe("error");
        if (client === "responses") expect([last.event, (last.data as any).response.status]).toEqual(["response.failed", "failed"]);
        if (client === "gemini") expect((last.data as any).error.status).toBeString();
        expect(events.some((e) => e.data === "[DONE]")).toBe(false);
      }
    }
  });
});
