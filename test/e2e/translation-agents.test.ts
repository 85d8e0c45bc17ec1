import { beforeAll, describe, expect, test } from "bun:test";
import { KEY_FORMATS, keyPerFormat } from "../helpers/key-per-format.ts";
import type { KeyFormat } from "../../src/wire/constants.ts";
import { json, sse, type RecordedRequest } from "../helpers/mock-upstream.ts";
import type { TestRouter } from "../helpers/router.ts";
import { anthropicClient, geminiClient, openaiClient } from "../helpers/sdk.ts";

/**
 * What coding agents rely on across translated pairs (black box, local HTTPS upstreams,
 * official SDKs): tool loops, stop reasons, tool schemas, ids across turns.
 */

const FORMATS = KEY_FORMATS;
const pairs = keyPerFormat("ag");
const ups = pairs.ups;
let router: TestRouter;
beforeAll(() => {
  router = pairs.router;
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

const ev = (data: Record<string, unknown>): [string, unknown] => [String(data.type), data];
const anthropicStart = ev({ type: "message_start", message: { id: "msg_ag", type: "message", role: "assistant", model: "claude-ag", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } });
const anthropicEnd = (stop: string) => [ev({ type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } }), ev({ type: "message_stop" })];

const READ_TOOL = { name: "read_file", description: "Read a file", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } };
const LIST_TOOL = { name: "list_files", description: "List the files", parameters: { type: "object", properties: {} } };

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

describe("a streamed call of a tool that takes no arguments", () => {
  /**
   * Anthropic streams a call without arguments as a `tool_use` block whose only
   * `input_json_delta` is empty (and some Chat servers send no argument fragment at
   * all). Chat and Responses carry arguments as JSON text, and OpenAI always gives an
   * object there (`"{}"`); the translated streams left the text empty, so the SDKs'
   * assembled call had `arguments: ""` and an agent's `JSON.parse(arguments)` threw.
   * Complete (non-stream) answers already wrote `"{}"`.
   */
  const anthropicNoArgs = () =>
    sse([
      anthropicStart,
      ev({ type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "toolu_01LS", name: "list_files", input: {} } }),
      ev({ type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: "" } }),
      ev({ type: "content_block_stop", index: 0 }),
      ev({ type: "content_block_start", index: 1, content_block: { type: "tool_use", id: "toolu_01RD", name: "read_file", input: {} } }),
      ev({ type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: '{"path":"a"}' } }),
      ev({ type: "content_block_stop", index: 1 }),
      ...anthropicEnd("tool_use"),
    ]);
  const chatNoArgs = () =>
    sse([
      chatChunk({ role: "assistant", content: null }),
      chatChunk({ tool_calls: [{ index: 0, id: "call_ls", type: "function", function: { name: "list_files" } }] }),
      chatChunk({}, "tool_calls"),
      chatUsageChunk,
    ], { done: true });

  test("Chat client on an Anthropic key: the call's arguments are \"{}\"", async () => {
    answerWith("anthropic", anthropicNoArgs);
    const sdk = openaiClient(router.url, router.ownerKey);
    const answer = await sdk.chat.completions.stream({ model: "ag-anthropic", tools: [{ type: "function", function: LIST_TOOL }, { type: "function", function: READ_TOOL }], messages: [{ role: "user", content: "List" }] }).finalChatCompletion();
    const calls = (answer.choices[0]!.message.tool_calls ?? []).map((c) => ({ id: c.id, ...(c as { function: { name: string; arguments: string } }).function }));
    expect(calls.map((c) => ({ ...c, parsed: JSON.parse(c.arguments) }))).toEqual([
      { id: "toolu_01LS", name: "list_files", arguments: "{}", parsed: {} },
      { id: "toolu_01RD", name: "read_file", arguments: '{"path":"a"}', parsed: { path: "a" } },
    ]);
    expect(answer.choices[0]!.finish_reason).toBe("tool_calls");
  });

  test("Responses client on an Anthropic key, and on a Chat key that sends no fragment: arguments \"{}\"", async () => {
    const sdk = openaiClient(router.url, router.ownerKey);
    for (const [upstream, script] of [["anthropic", anthropicNoArgs], ["openai", chatNoArgs]] as const) {
      answerWith(upstream, script);
      const stream = sdk.responses.stream({ model: `ag-${upstream}`, input: "List", tools: [{ type: "function", strict: false, ...LIST_TOOL }, { type: "function", strict: false, ...READ_TOOL }] });
      const done: string[] = [];
      stream.on("response.function_call_arguments.done", (e) => done.push(e.arguments));
      const answer = await stream.finalResponse();
      const first = answer.output[0] as { type: string; name: string; arguments: string };
      expect({ type: first.type, name: first.name, arguments: first.arguments }).toEqual({ type: "function_call", name: "list_files", arguments: "{}" });
      expect(done[0]).toBe("{}");
    }
  });
});

describe("a Chat upstream that gives its calls no id", () => {
  /**
   * Some OpenAI-compatible servers leave a call's `id` out. The Chat reader took "" for a
   * complete answer's calls and `call_<n>` (from 0 in every answer) for a stream's, so an
   * Anthropic client got `tool_use` blocks all named "" (which it cannot answer apart,
   * and which Anthropic's own API refuses when the conversation is sent there), or the
   * same `call_0` turn after turn. A client answers a call by its id: each needs one of
   * its own in the whole conversation (the Gemini reader makes them so already).
   */
  const callsWithoutIds = () =>
    json({ id: "chatcmpl-noid", object: "chat.completion", created: 1, model: "gpt-ag", choices: [{ index: 0, message: { role: "assistant", content: null, tool_calls: ["a", "b"].map((path) => ({ type: "function", function: { name: "read_file", arguments: JSON.stringify({ path }) } })) }, finish_reason: "tool_calls" }] });
  const streamWithoutId = () =>
    sse([chatChunk({ role: "assistant" }), chatChunk({ tool_calls: [{ index: 0, type: "function", function: { name: "read_file", arguments: '{"path":"a"}' } }] }), chatChunk({}, "tool_calls"), chatUsageChunk], { done: true });
  const request = { model: "ag-openai", max_tokens: 100, tools: [{ name: READ_TOOL.name, input_schema: READ_TOOL.parameters as never }], messages: [{ role: "user" as const, content: "Read a and b" }] };
  const ids = (content: Array<{ type: string; id?: string }>) => content.filter((b) => b.type === "tool_use").map((b) => b.id!);

  test("Anthropic client: every call has its own non-empty id, in Anthropic's alphabet, JSON and stream, turn after turn", async () => {
    const sdk = anthropicClient(router.url, router.ownerKey);
    answerWith("openai", callsWithoutIds);
    const json1 = ids((await sdk.messages.create(request)).content);
    const json2 = ids((await sdk.messages.create(request)).content);
    answerWith("openai", streamWithoutId);
    const stream1 = ids((await sdk.messages.stream(request).finalMessage()).content);
    const stream2 = ids((await sdk.messages.stream(request).finalMessage()).content);
    const all = [...json1, ...json2, ...stream1, ...stream2];
    expect(all.length).toBe(6);
    expect(new Set(all).size).toBe(6);
    for (const id of all) expect(id).toMatch(/^[a-zA-Z0-9_-]{1,40}$/);
  });

  test("the id comes back as the result's tool_call_id on the next turn", async () => {
    const sdk = anthropicClient(router.url, router.ownerKey);
    answerWith("openai", callsWithoutIds);
    const first = await sdk.messages.create(request);
    const [a, b] = ids(first.content);
    expect(a).not.toBe(b);
    answerWith("openai", () => json({ id: "chatcmpl-2", object: "chat.completion", created: 1, model: "gpt-ag", choices: [{ index: 0, message: { role: "assistant", content: "done" }, finish_reason: "stop" }] }));
    await sdk.messages.create({ ...request, messages: [...request.messages, { role: "assistant", content: first.content as never }, { role: "user", content: [{ type: "tool_result", tool_use_id: a!, content: "A" }, { type: "tool_result", tool_use_id: b!, content: "B" }] }] });
    const messages = sent("openai").messages as Array<Record<string, any>>;
    expect(messages[1]!.tool_calls.map((c: { id: string }) => c.id)).toEqual([a, b]);
    expect(messages.slice(2).map((m) => [m.role, m.tool_call_id, m.content])).toEqual([["tool", a, "A"], ["tool", b, "B"]]);
  });
});

// ——— Checked and found right ———

describe("what the review probed and found right", () => {
  test("tool_choice forms, the one-call-at-a-time switch and a Gemini client's allowed functions reach each upstream with their meaning", async () => {
    for (const f of FORMATS) answerWith(f, () => json({ error: { message: "stop here" } }, 400));
    const choices = (f: KeyFormat) => {
      const b = sent(f);
      return { tool_choice: b.tool_choice, parallel_tool_calls: b.parallel_tool_calls, toolConfig: b.toolConfig, tools: (b.tools ?? []).map((t: any) => t.name ?? t.function?.name ?? t.functionDeclarations?.map((d: any) => d.name)) };
    };
    const anthropic = anthropicClient(router.url, router.ownerKey);
    const two = [{ name: "a", input_schema: { type: "object" as const, properties: {} } }, { name: "b", input_schema: { type: "object" as const, properties: {} } }];
    const named = { type: "tool" as const, name: "b", disable_parallel_tool_use: true };
    for (const f of ["openai", "responses", "gemini"] as KeyFormat[]) await anthropic.messages.create({ model: `ag-${f}`, max_tokens: 10, tools: two, tool_choice: named, messages: [{ role: "user", content: "x" }] }).catch(() => 0);
    expect(choices("openai")).toMatchObject({ tool_choice: { type: "function", function: { name: "b" } }, parallel_tool_calls: false });
    expect(choices("responses")).toMatchObject({ tool_choice: { type: "function", name: "b" }, parallel_tool_calls: false });
    expect(choices("gemini")).toMatchObject({ toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["b"] } } });

    const chat = openaiClient(router.url, router.ownerKey);
    for (const f of ["anthropic", "responses", "gemini"] as KeyFormat[]) await chat.chat.completions.create({ model: `ag-${f}`, tools: [{ type: "function", function: { name: "a" } }, { type: "function", function: { name: "b" } }], tool_choice: "required", parallel_tool_calls: false, messages: [{ role: "user", content: "x" }] }).catch(() => 0);
    expect(choices("anthropic").tool_choice).toEqual({ type: "any", disable_parallel_tool_use: true });
    expect(choices("responses")).toMatchObject({ tool_choice: "required", parallel_tool_calls: false });
    // Gemini has no switch for one call at a time (docs/translation.md: dropped).
    expect(choices("gemini").toolConfig).toEqual({ functionCallingConfig: { mode: "ANY" } });

    const gemini = geminiClient(router.url, router.ownerKey);
    for (const f of ["anthropic", "responses", "openai"] as KeyFormat[]) await gemini.models.generateContent({ model: `ag-${f}`, contents: "x", config: { tools: [{ functionDeclarations: [{ name: "a" }, { name: "b" }, { name: "c" }] }], toolConfig: { functionCallingConfig: { mode: "ANY" as never, allowedFunctionNames: ["a", "b"] } } } }).catch(() => 0);
    expect(choices("anthropic")).toMatchObject({ tool_choice: { type: "any" }, tools: ["a", "b"] });
    expect(choices("responses")).toMatchObject({ tool_choice: "required", tools: ["a", "b"] });
    expect(choices("openai")).toMatchObject({ tool_choice: "required", tools: ["a", "b"] });
  });

  test("stop reasons through streams: Anthropic's refusal is a content filter for OpenAI clients; Gemini's MAX_TOKENS is max_tokens with thinking counted", async () => {
    answerWith("anthropic", () => sse([anthropicStart, ev({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }), ev({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "No" } }), ev({ type: "content_block_stop", index: 0 }), ...anthropicEnd("refusal")]));
    const openai = openaiClient(router.url, router.ownerKey);
    const response = await openai.responses.stream({ model: "ag-anthropic", input: "x" }).finalResponse();
    expect({ status: response.status, details: response.incomplete_details, text: response.output_text }).toEqual({ status: "incomplete", details: { reason: "content_filter" }, text: "No" });
    const completion = await openai.chat.completions.stream({ model: "ag-anthropic", messages: [{ role: "user", content: "x" }] }).finalChatCompletion();
    expect(completion.choices[0]!.finish_reason).toBe("content_filter");

    answerWith("gemini", () => sse([
      { candidates: [{ content: { role: "model", parts: [{ text: "abc" }] }, index: 0 }], responseId: "g1", modelVersion: "gm" },
      { candidates: [{ content: { role: "model", parts: [{ text: "d" }] }, finishReason: "MAX_TOKENS", index: 0 }], usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 4, thoughtsTokenCount: 3, totalTokenCount: 12 }, responseId: "g1", modelVersion: "gm" },
    ]));
    const message = await anthropicClient(router.url, router.ownerKey).messages.stream({ model: "ag-gemini", max_tokens: 4, messages: [{ role: "user", content: "x" }] }).finalMessage();
    expect(message.stop_reason).toBe("max_tokens");
    expect(message.usage).toMatchObject({ input_tokens: 5, output_tokens: 7 });
  });

  test("an Anthropic client's error result and a result holding an image reach each upstream in its own words", async () => {
    for (const f of FORMATS) answerWith(f, () => json({ error: { message: "stop here" } }, 400));
    const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
    const sdk = anthropicClient(router.url, router.ownerKey);
    for (const f of ["openai", "responses", "gemini"] as KeyFormat[]) {
      await sdk.messages.create({ model: `ag-${f}`, max_tokens: 100, tools: [{ name: "shot", input_schema: { type: "object", properties: {} } }], messages: [
        { role: "user", content: "hi" },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_01A", name: "shot", input: {} }, { type: "tool_use", id: "toolu_01B", name: "shot", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_01A", is_error: true, content: "boom" }, { type: "tool_result", tool_use_id: "toolu_01B", content: [{ type: "text", text: "here" }, { type: "image", source: { type: "base64", media_type: "image/png", data: png } }] }, { type: "text", text: "go on" }] },
      ] }).catch(() => 0);
    }
    expect(sent("openai").messages.slice(2)).toEqual([
      { role: "tool", tool_call_id: "toolu_01A", content: "boom" },
      { role: "tool", tool_call_id: "toolu_01B", content: "here" },
      { role: "user", content: [{ type: "image_url", image_url: { url: `data:image/png;base64,${png}` } }, { type: "text", text: "go on" }] },
    ]);
    expect(sent("responses").input.slice(1).map((i: any) => [i.type, i.call_id ?? i.role, i.output ?? i.content?.[0]?.type])).toEqual([
      ["function_call", "toolu_01A", undefined], ["function_call", "toolu_01B", undefined],
      ["function_call_output", "toolu_01A", "boom"], ["function_call_output", "toolu_01B", "here"],
      ["message", "user", "input_image"], ["message", "user", "input_text"],
    ]);
    // Gemini's documented error convention; the calls answered by name and order.
    expect(sent("gemini").contents[2].parts.slice(0, 3)).toEqual([
      { functionResponse: { name: "shot", response: { error: "boom" } } },
      { functionResponse: { name: "shot", response: { result: "here" } } },
      { inlineData: { mimeType: "image/png", data: png } },
    ]);
  });
});
