import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import type { KeyFormat } from "../../src/wire/constants.ts";
import { addKey } from "../helpers/keys.ts";
import { json, sse, startMockUpstream, type MockUpstream, type RecordedRequest } from "../helpers/mock-upstream.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";
import { anthropicClient, geminiClient, openaiClient } from "../helpers/sdk.ts";

/**
 * What coding agents rely on across translated pairs (black box, local HTTPS upstreams,
 * official SDKs): tool loops, stop reasons, tool schemas, ids across turns.
 */

const FORMATS: KeyFormat[] = ["openai", "responses", "anthropic", "gemini"];
let router: TestRouter;
const ups = new Map<KeyFormat, MockUpstream>();

beforeAll(async () => {
  router = await startRouter();
  const mapping: string[] = [];
  for (const [i, format] of FORMATS.entries()) {
    const mock = startMockUpstream();
    ups.set(format, mock);
    await addKey(router, { provider: mock.url, level: i + 1, config: { provider_type: "standard", formats: [format] } });
    mapping.push(`ag-${format}=${i + 1}`);
  }
  await router.deps.settings.update({ LEVEL_MAPPER: mapping.join(",") });
});
afterAll(async () => {
  await router.stop();
  await Promise.all([...ups.values()].map((m) => m.stop()));
});
beforeEach(() => {
  for (const mock of ups.values()) mock.reset();
});

/** Scripts the upstream of a format to answer every model call so (replacing its earlier script). */
function answerWith(format: KeyFormat, answer: (request: RecordedRequest) => Response): void {
  const mock = ups.get(format)!;
  mock.reset();
  mock.route("POST", /.*/, answer);
}
const sent = (format: KeyFormat): any => ups.get(format)!.requests.at(-1)!.json;

const chatChunk = (delta: Record<string, unknown>, finish: string | null = null) => ({ id: "chatcmpl-ag", object: "chat.completion.chunk", created: 1, model: "gpt-ag", choices: [{ index: 0, delta, finish_reason: finish }] });
const chatUsageChunk = { id: "chatcmpl-ag", object: "chat.completion.chunk", created: 1, model: "gpt-ag", choices: [], usage: { prompt_tokens: 20, completion_tokens: 5, total_tokens: 25 } };


const READ_TOOL = { name: "read_file", description: "Read a file", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } };

describe("a Chat upstream that ends a tool-calling answer with finish_reason \"stop\"", () => {
  /**
   * Not every OpenAI-compatible server says `tool_calls` when its answer calls tools: some
   * end such an answer with `stop`. The Gemini and Responses readers already infer the
   * finish from the calls (Gemini has no reason of its own for it); the Chat reader took
   * the reason as given (codecs/chat/answer.ts `irFinish(choice.finish_reason)`,
   * stream-read.ts likewise), so an Anthropic client got `stop_reason: "end_turn"` with
   * `tool_use` blocks, and an agent loop that runs tools on `tool_use` stopped there.
   */
  const callAnswer = () =>
    json({ id: "chatcmpl-ag", object: "chat.completion", created: 1, model: "gpt-ag", choices: [{ index: 0, message: { role: "assistant", content: null, tool_calls: [{ id: "call_r1", type: "function", function: { name: "read_file", arguments: '{"path":"a.txt"}' } }] }, finish_reason: "stop" }], usage: { prompt_tokens: 20, completion_tokens: 5, total_tokens: 25 } });
  const callStream = () =>
    sse([
      chatChunk({ role: "assistant", content: null }),
      chatChunk({ tool_calls: [{ index: 0, id: "call_r1", type: "function", function: { name: "read_file", arguments: '{"path":' } }] }),
      chatChunk({ tool_calls: [{ index: 0, function: { arguments: '"a.txt"}' } }] }),
      chatChunk({}, "stop"),
      chatUsageChunk,
    ], { done: true });
  const request = { model: "ag-openai", max_tokens: 100, tools: [{ name: READ_TOOL.name, description: READ_TOOL.description, input_schema: READ_TOOL.parameters as never }], messages: [{ role: "user" as const, content: "Read a.txt" }] };

  test("Anthropic client, JSON: stop_reason is tool_use", async () => {
    answerWith("openai", callAnswer);
    const message = await anthropicClient(router.url, router.ownerKey).messages.create(request);
    expect(message.content as unknown[]).toEqual([{ type: "tool_use", id: "call_r1", name: "read_file", input: { path: "a.txt" } }]);
    expect(message.stop_reason).toBe("tool_use");
  });

  test("Anthropic client, stream: stop_reason is tool_use", async () => {
    answerWith("openai", callStream);
    const message = await anthropicClient(router.url, router.ownerKey).messages.stream(request).finalMessage();
    expect(message.content as unknown[]).toEqual([{ type: "tool_use", id: "call_r1", name: "read_file", input: { path: "a.txt" } }]);
    expect(message.stop_reason).toBe("tool_use");
  });

  test("Gemini and Responses clients still see the call (their formats have no tool-call reason)", async () => {
    answerWith("openai", callStream);
    const answer = await openaiClient(router.url, router.ownerKey).responses.stream({ model: "ag-openai", input: "Read a.txt", tools: [{ type: "function", strict: false, ...READ_TOOL }] }).finalResponse();
    expect(answer.status).toBe("completed");
    expect(answer.output.map((item) => item.type)).toEqual(["function_call"]);
    answerWith("openai", callAnswer);
    const gemini = await geminiClient(router.url, router.ownerKey).models.generateContent({ model: "ag-openai", contents: "Read a.txt", config: { tools: [{ functionDeclarations: [{ name: READ_TOOL.name, parametersJsonSchema: READ_TOOL.parameters }] }] } });
    expect(gemini.functionCalls).toEqual([{ id: "call_r1", name: "read_file", args: { path: "a.txt" } }]);
    expect(gemini.candidates?.[0]?.finishReason).toBe("STOP" as never);
  });
});

describe("a Gemini client's tool schema in Gemini's own Schema: its int64 bounds are strings", () => {
  /**
   * Gemini's `Schema` holds `minItems`, `maxItems`, `minLength`, `maxLength`,
   * `minProperties` and `maxProperties` as int64, which the proto's JSON writes as
   * strings (the @google/genai types say `minItems?: string`). The schema converter kept
   * them as written (codecs/gemini/schema.ts), so the JSON Schema sent to the other
   * upstreams said `"minItems": "1"`, which JSON Schema (and the providers validating
   * tool schemas) rejects: these keywords take a non-negative integer.
   */
  const declaration = {
    name: "pick",
    parameters: {
      type: "OBJECT",
      properties: {
        paths: { type: "ARRAY", items: { type: "STRING" }, minItems: "1", maxItems: "3" },
        note: { type: "STRING", minLength: "2", maxLength: "80", nullable: true },
        extra: { type: "OBJECT", properties: { k: { type: "STRING" } }, minProperties: "0", maxProperties: "4" },
        depth: { type: "INTEGER", minimum: 0, maximum: 5, format: "int32" },
      },
      required: ["paths"],
    },
  };
  const expected = {
    type: "object",
    properties: {
      paths: { type: "array", items: { type: "string" }, minItems: 1, maxItems: 3 },
      note: { type: ["string", "null"], minLength: 2, maxLength: 80 },
      extra: { type: "object", properties: { k: { type: "string" } }, minProperties: 0, maxProperties: 4 },
      depth: { type: "integer", minimum: 0, maximum: 5, format: "int32" },
    },
    required: ["paths"],
  };

  for (const upstream of ["openai", "responses", "anthropic"] as KeyFormat[]) {
    test(`${upstream} upstream receives the bounds as numbers`, async () => {
      answerWith(upstream, () => new Response(JSON.stringify({ error: { message: "stop here" } }), { status: 400, headers: { "content-type": "application/json" } }));
      const sdk = geminiClient(router.url, router.ownerKey);
      await sdk.models.generateContent({ model: `ag-${upstream}`, contents: "Pick files", config: { tools: [{ functionDeclarations: [declaration as never] }] } }).catch(() => undefined);
      const body = sent(upstream);
      const schema = upstream === "openai" ? body.tools[0].function.parameters : upstream === "responses" ? body.tools[0].parameters : body.tools[0].input_schema;
      expect(schema).toEqual(expected);
    });
  }
});
