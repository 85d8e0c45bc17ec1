import { beforeAll, describe, expect, test } from "bun:test";
import { KEY_FORMATS, keyPerFormat } from "../helpers/key-per-format.ts";
import type { KeyFormat } from "../../src/wire/constants.ts";
import { CANNED_USAGE, cannedAnswer, cannedError, cannedStream, type CannedCall } from "../helpers/format-answers.ts";
import { usageRows } from "../helpers/keys.ts";
import type { MockUpstream, RecordedRequest } from "../helpers/mock-upstream.ts";
import { waitFor, type TestRouter } from "../helpers/router.ts";
import { anthropicClient, geminiClient, geminiV3Client, openaiClient } from "../helpers/sdk.ts";

/**
 * Issue 16, every directed pair: each of the four client formats, through its official
 * SDK, served by a key of each of the three other formats. The upstreams answer in their
 * own format (format-answers.ts, written independently of the translators); the SDK must
 * read a complete answer, a stream of thinking and text, a stream of two parallel tool
 * calls (fragmented, and interleaved where the upstream format allows), and an upstream
 * error, and every call is metered on the upstream's own usage.
 */

const FORMATS = KEY_FORMATS;
const WIRE_OF: Record<KeyFormat, string> = { openai: "openai-chat", responses: "openai-responses", anthropic: "anthropic-messages", gemini: "gemini-generate" };
const PRICING = { ChatPricing: { "pair-*": { InputText: 2, OutputText: 8, CachedText: 0.5 } } };

const CALLS: CannedCall[] = [
  { id: "call_paris", name: "weather", args: { city: "Paris" } },
  { id: "call_oslo", name: "weather", args: { city: "Oslo" } },
];
const WEATHER = { name: "weather", description: "Weather of a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } };

const pairs = keyPerFormat("pair", { pricing: PRICING });
const upstreams = pairs.ups;
let router: TestRouter;
beforeAll(() => {
  router = pairs.router;
});

type Answer = "json" | "thinking" | "tools" | "error";

/** Scripts the upstream of a format to give one kind of answer to any model call. */
function script(format: KeyFormat, answer: Answer): MockUpstream {
  const mock = upstreams.get(format)!;
  mock.route("POST", /.*/, (request) => {
    const model = String(request.json?.model ?? /models\/([^:]+)/.exec(request.path)?.[1] ?? "");
    switch (answer) {
      case "json": return cannedAnswer(format, model, "Bonjour");
      case "thinking": return cannedStream(format, { model, thinking: "Let me think.", text: "Bonjour tout le monde" });
      case "tools": return cannedStream(format, { model, calls: CALLS });
      case "error": return cannedError(format, 429, "Slow down please");
    }
  });
  return mock;
}

/** What every client reads back, whatever its format. */
interface Read {
  text: string;
  thinking?: string;
  calls: Array<{ id: string; name: string; args: unknown }>;
  usage: { input: number; output: number };
}

/** The client of one format, through its official SDK. */
interface Client {
  json(model: string): Promise<Read>;
  stream(model: string, tools: boolean): Promise<Read>;
  /** The status of the SDK's error for a failed call. */
  errorStatus(model: string): Promise<number>;
}

const statusOf = async (call: () => Promise<unknown>): Promise<number> => {
  try {
    await call();
  } catch (error) {
    return (error as { status?: number; code?: number }).status ?? (error as { code?: number }).code ?? -1;
  }
  return 200;
};

function clientOf(format: KeyFormat): Client {
  switch (format) {
    case "openai": {
      const sdk = openaiClient(router.url, router.ownerKey);
      const request = (model: string, tools: boolean) => ({ model, messages: [{ role: "user" as const, content: "Weather in Paris and Oslo?" }], ...(tools ? { tools: [{ type: "function" as const, function: WEATHER }] } : {}) });
      return {
        async json(model) {
          const answer = await sdk.chat.completions.create(request(model, false));
          return { text: answer.choices[0]!.message.content ?? "", calls: [], usage: { input: answer.usage!.prompt_tokens, output: answer.usage!.completion_tokens } };
        },
        async stream(model, tools) {
          const stream = sdk.chat.completions.stream({ ...request(model, tools), stream_options: { include_usage: true } });
          let thinking = "";
          stream.on("chunk", (chunk) => {
            const delta = chunk.choices[0]?.delta as { reasoning_content?: string } | undefined;
            if (delta?.reasoning_content) thinking += delta.reasoning_content;
          });
          const answer = await stream.finalChatCompletion();
          const message = answer.choices[0]!.message;
          return {
            text: message.content ?? "",
            thinking,
            calls: (message.tool_calls ?? []).map((c) => ({ id: c.id, name: (c as { function: { name: string } }).function.name, args: JSON.parse((c as { function: { arguments: string } }).function.arguments) })),
            usage: { input: answer.usage!.prompt_tokens, output: answer.usage!.completion_tokens },
          };
        },
        errorStatus: (model) => statusOf(() => sdk.chat.completions.create(request(model, false))),
      };
    }
    case "responses": {
      const sdk = openaiClient(router.url, router.ownerKey);
      const request = (model: string, tools: boolean) => ({ model, input: "Weather in Paris and Oslo?", ...(tools ? { tools: [{ type: "function" as const, strict: false, ...WEATHER }] } : {}) });
      const read = (answer: { output_text: string; output: Array<Record<string, any>>; usage?: { input_tokens: number; output_tokens: number } | null }): Read => ({
        text: answer.output_text,
        thinking: answer.output.filter((item) => item.type === "reasoning").flatMap((item) => (item.summary ?? []).map((s: { text: string }) => s.text)).join(""),
        calls: answer.output.filter((item) => item.type === "function_call").map((item) => ({ id: item.call_id, name: item.name, args: JSON.parse(item.arguments) })),
        usage: { input: answer.usage!.input_tokens, output: answer.usage!.output_tokens },
      });
      return {
        json: async (model) => read(await sdk.responses.create(request(model, false))),
        async stream(model, tools) {
          const stream = sdk.responses.stream({ ...request(model, tools), ...(tools ? {} : { reasoning: { effort: "low", summary: "auto" } }) });
          return read(await stream.finalResponse());
        },
        errorStatus: (model) => statusOf(() => sdk.responses.create(request(model, false))),
      };
    }
    case "anthropic": {
      const sdk = anthropicClient(router.url, router.ownerKey);
      const request = (model: string, tools: boolean) => ({ model, max_tokens: 1000, messages: [{ role: "user" as const, content: "Weather in Paris and Oslo?" }], ...(tools ? { tools: [{ name: WEATHER.name, description: WEATHER.description, input_schema: WEATHER.parameters as never }] } : {}) });
      const read = (message: { content: Array<Record<string, any>>; usage: { input_tokens: number; output_tokens: number; cache_read_input_tokens?: number | null; cache_creation_input_tokens?: number | null } }): Read => ({
        text: message.content.filter((b) => b.type === "text").map((b) => b.text).join(""),
        thinking: message.content.filter((b) => b.type === "thinking").map((b) => b.thinking).join(""),
        calls: message.content.filter((b) => b.type === "tool_use").map((b) => ({ id: b.id, name: b.name, args: b.input })),
        // Anthropic counts cached input apart: all input is the sum.
        usage: { input: message.usage.input_tokens + (message.usage.cache_read_input_tokens ?? 0) + (message.usage.cache_creation_input_tokens ?? 0), output: message.usage.output_tokens },
      });
      return {
        json: async (model) => read(await sdk.messages.create(request(model, false))),
        stream: async (model, tools) => read(await sdk.messages.stream({ ...request(model, tools), ...(tools ? {} : { thinking: { type: "enabled", budget_tokens: 1024 } }) }).finalMessage()),
        errorStatus: (model) => statusOf(() => sdk.messages.create(request(model, false))),
      };
    }
    case "gemini": {
      const sdk = geminiClient(router.url, router.ownerKey);
      const request = (model: string, tools: boolean) => ({
        model,
        contents: "Weather in Paris and Oslo?",
        config: tools ? { tools: [{ functionDeclarations: [{ name: WEATHER.name, description: WEATHER.description, parametersJsonSchema: WEATHER.parameters }] }] } : { thinkingConfig: { includeThoughts: true } },
      });
      return {
        async json(model) {
          const answer = await sdk.models.generateContent(request(model, false));
          return { text: answer.text ?? "", calls: [], usage: { input: answer.usageMetadata!.promptTokenCount!, output: answer.usageMetadata!.candidatesTokenCount! + (answer.usageMetadata!.thoughtsTokenCount ?? 0) } };
        },
        async stream(model, tools) {
          let text = "";
          let thinking = "";
          const calls: Read["calls"] = [];
          let usage = { input: 0, output: 0 };
          for await (const chunk of await sdk.models.generateContentStream(request(model, tools))) {
            for (const part of chunk.candidates?.[0]?.content?.parts ?? []) {
              if (part.thought && part.text) thinking += part.text;
              else if (part.text) text += part.text;
              if (part.functionCall) calls.push({ id: part.functionCall.id ?? "", name: part.functionCall.name ?? "", args: part.functionCall.args });
            }
            if (chunk.usageMetadata?.promptTokenCount) usage = { input: chunk.usageMetadata.promptTokenCount, output: (chunk.usageMetadata.candidatesTokenCount ?? 0) + (chunk.usageMetadata.thoughtsTokenCount ?? 0) };
          }
          return { text, thinking, calls, usage };
        },
        errorStatus: (model) => statusOf(() => sdk.models.generateContent(request(model, false))),
      };
    }
  }
}

/** The usage rows written since `before`, once `count` are there. */
async function newRows(before: number, count: number): Promise<Array<Record<string, any>>> {
  const rows = await waitFor(async () => {
    const all = (await usageRows(router)).slice(before);
    return all.length >= count ? all : undefined;
  }, 5000, `${count} usage rows`);
  return rows ?? [];
}

/** The model call the upstream received (the last one). */
const lastCall = (mock: MockUpstream): RecordedRequest => mock.requests.at(-1)!;

for (const client of FORMATS) {
  for (const upstream of FORMATS.filter((f) => f !== client)) {
    describe(`${client} client, ${upstream} key`, () => {
      const model = `pair-${upstream}`;

      test("a complete answer, metered on the upstream's usage", async () => {
        const mock = script(upstream, "json");
        const before = (await usageRows(router)).length;
        const read = await clientOf(client).json(model);
        expect(read.text).toBe("Bonjour");
        expect(read.usage).toEqual({ input: CANNED_USAGE.input, output: CANNED_USAGE.output });
        expect(mock.requests).toHaveLength(1);
        const [row] = await newRows(before, 1);
        expect(row).toMatchObject({ prompt_tokens: CANNED_USAGE.input, completion_tokens: CANNED_USAGE.output, cache_read_tokens: CANNED_USAGE.cached });
        // The request log says which format the call was translated to.
        const [record] = (await (await router.fetch(`/x-requests?model=${model}&size=1`)).json()) as Array<{ attempts: Array<{ translated_to: string | null }> }>;
        expect(record!.attempts.map((a) => a.translated_to)).toEqual([WIRE_OF[upstream]]);
      });

      test("a stream of thinking and text", async () => {
        script(upstream, "thinking");
        const read = await clientOf(client).stream(model, false);
        expect(read.text).toBe("Bonjour tout le monde");
        // Chat has no reasoning field of its own; the router writes `reasoning_content`, which the others read.
        expect(read.thinking).toBe("Let me think.");
        expect(read.usage).toEqual({ input: CANNED_USAGE.input, output: CANNED_USAGE.output });
      });

      test("a stream of two parallel tool calls, each with its own arguments, in order", async () => {
        const mock = script(upstream, "tools");
        const before = (await usageRows(router)).length;
        const read = await clientOf(client).stream(model, true);
        expect(read.calls.map((c) => [c.name, c.args])).toEqual([
          ["weather", { city: "Paris" }],
          ["weather", { city: "Oslo" }],
        ]);
        // Ids are distinct (a client answers each call by its id).
        expect(new Set(read.calls.map((c) => c.id)).size).toBe(2);
        // The tool reached the upstream in its own format.
        const sent = lastCall(mock).json;
        const names = upstream === "gemini" ? sent.tools[0].functionDeclarations.map((f: { name: string }) => f.name) : sent.tools.map((t: any) => t.name ?? t.function?.name);
        expect(names).toEqual(["weather"]);
        const [row] = await newRows(before, 1);
        expect(row).toMatchObject({ prompt_tokens: CANNED_USAGE.input, completion_tokens: CANNED_USAGE.output, cache_read_tokens: CANNED_USAGE.cached });
      });

      test("an upstream error reaches the SDK with its status", async () => {
        script(upstream, "error");
        expect(await clientOf(client).errorStatus(model)).toBe(429);
      });
    });
  }
}

describe("the Gemini SDK's other major (genai 3.x calls /v1/models/…)", () => {
  test("a stream of text through a Chat key, and a complete answer through an Anthropic key", async () => {
    const sdk = geminiV3Client(router.url, router.ownerKey);
    script("openai", "thinking");
    let text = "";
    for await (const chunk of await sdk.models.generateContentStream({ model: "pair-openai", contents: "Bonjour?" })) text += chunk.text ?? "";
    expect(text).toBe("Bonjour tout le monde");
    // The upstream got a Chat request for the model the path named.
    expect(lastCall(upstreams.get("openai")!).json).toMatchObject({ model: "pair-openai", stream: true });
    script("anthropic", "json");
    const answer = await sdk.models.generateContent({ model: "pair-anthropic", contents: "Bonjour?" });
    expect(answer.text).toBe("Bonjour");
    expect(answer.usageMetadata?.promptTokenCount).toBe(CANNED_USAGE.input);
  });
});

describe("what cannot be carried", () => {
  test("is a 400 in the client's envelope naming its parameter and the upstream format, with nothing sent upstream and nothing charged", async () => {
    for (const mock of upstreams.values()) script([...upstreams.entries()].find(([, m]) => m === mock)![0], "json");
    const before = (await usageRows(router)).length;
    const cases: Array<{ path: string; body: unknown; param: string; upstream: string; envelope: (body: any) => unknown }> = [
      // Server-side state a non-Responses upstream does not hold. (A `previous_response_id`
      // never gets this far: the router pins it to the key that made the response, and a
      // translated answer made none, so its id is a 404 like any unknown one.)
      { path: "/v1/responses", body: { model: "pair-anthropic", input: "hi", conversation: "conv_1" }, param: "conversation", upstream: "Anthropic Messages", envelope: (b) => b.error.param },
      // Several candidates: the answer would bring back one.
      { path: "/v1beta/models/pair-openai:generateContent", body: { contents: [{ role: "user", parts: [{ text: "hi" }] }], generationConfig: { candidateCount: 2 } }, param: "generationConfig.candidateCount", upstream: "OpenAI Chat Completions", envelope: (b) => b.error.status },
      { path: "/v1/chat/completions", body: { model: "pair-responses", messages: [{ role: "user", content: "hi" }], n: 2 }, param: "n", upstream: "OpenAI Responses", envelope: (b) => b.error.param },
      // A tool only OpenAI runs.
      { path: "/v1/responses", body: { model: "pair-gemini", input: "hi", tools: [{ type: "file_search", vector_store_ids: ["vs_1"] }] }, param: "tools[0].type", upstream: "Gemini generateContent", envelope: (b) => b.error.param },
    ];
    for (const c of cases) {
      const res = await router.fetch(c.path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(c.body) });
      const body = await res.json();
      expect(res.status, c.path).toBe(400);
      expect(body.error.message, c.path).toContain(c.upstream);
      // OpenAI's envelope names the parameter; Google's carries its status name and the message says which.
      if (c.path.startsWith("/v1beta")) expect(c.envelope(body)).toBe("INVALID_ARGUMENT");
      else expect(c.envelope(body)).toBe(c.param);
    }
    for (const mock of upstreams.values()) expect(mock.requests).toHaveLength(0);
    await router.deps.usageRecorder.flush();
    expect((await usageRows(router)).length).toBe(before);
  });
});

/** A stream that sends its first `events` chunks (one event each), then breaks off (the connection drops). */
function breakingAfter(response: Response, events: number): Response {
  const reader = response.body!.getReader();
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (sent >= events) {
        // A moment after the last event, so the router has relayed what came before.
        await Bun.sleep(50);
        controller.error(new Error("mock: upstream dropped the stream"));
        return;
      }
      const next = await reader.read();
      if (next.done) controller.close();
      else {
        sent++;
        controller.enqueue(next.value);
      }
    },
  });
  return new Response(body, { headers: response.headers });
}

describe("a translated stream that breaks midway", () => {
  for (const client of FORMATS) {
    const upstream = client === "anthropic" ? "gemini" : "anthropic";
    test(`${client} client on a ${upstream} key: the SDK sees the failure, in its format, after the text it got`, async () => {
      const mock = upstreams.get(upstream)!;
      // Enough events for text to reach the client, not the end.
      mock.route("POST", /.*/, (request) => {
        const model = String(request.json?.model ?? /models\/([^:]+)/.exec(request.path)?.[1] ?? "");
        return breakingAfter(cannedStream(upstream, { model, text: "Bonjour tout le monde, voici la suite" }), upstream === "anthropic" ? 3 : 1);
      });
      if (client === "responses") {
        // A Responses stream ends with response.failed (its stream helper hands back the failed response).
        const res = await router.fetch("/v1/responses", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: `pair-${upstream}`, input: "hi", stream: true }) });
        const events = (await res.text()).split("\n").filter((line) => line.startsWith("event: ")).map((line) => line.slice(7));
        expect(events).toContain("response.output_text.delta");
        expect(events.at(-1)).toBe("response.failed");
        return;
      }
      let failed = false;
      try {
        await clientOf(client).stream(`pair-${upstream}`, false);
      } catch {
        failed = true;
      }
      expect(failed).toBe(true);
      // It failed midway, not before its first event: the attempt answered, the call ended 502.
      await router.deps.usageRecorder.flush();
      const [last] = (await (await router.fetch(`/x-requests?model=pair-${upstream}&size=1`)).json()) as Array<{ status: number; attempts: Array<{ answered: boolean }> }>;
      expect(last!.status).toBe(502);
      expect(last!.attempts.map((a) => a.answered)).toEqual([true]);
    });
  }
});
