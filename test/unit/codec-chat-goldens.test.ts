/**
 * The Chat codec against the golden transcripts of the direct Anthropic ⇄ Chat
 * translators (test/fixtures/translation/anthropic-openai.ts): the Chat half of each
 * transcript is checked here, with the shared-model values the Anthropic half must
 * read or write written out by hand (the contract with the Anthropic codec). Once an
 * Anthropic codec is registered, the composed translators are checked against the whole
 * transcripts too.
 */
import { describe, expect, test } from "bun:test";
import { formatOf } from "../../src/formats/registry.ts";
import { createSseDecoder } from "../../src/formats/sse.ts";
import { chatCodec } from "../../src/formats/translate/codecs/chat/index.ts";
import { codecOf } from "../../src/formats/translate/codecs/index.ts";
import { compose } from "../../src/formats/translate/compose.ts";
import type { IrAnswer, IrEvent, IrRequest } from "../../src/formats/translate/ir.ts";
import { ANTHROPIC_CLIENT, CREATED, MAX_TOKENS, OPENAI_CLIENT, type Ev, type Transcript } from "../fixtures/translation/anthropic-openai.ts";
import { PNG } from "../fixtures/translation/chat.ts";
import { decodeSse as decode, sseText } from "../helpers/sse-transcripts.ts";

const context = { maxTokens: MAX_TOKENS };
const named = (transcripts: Transcript[], name: string) => transcripts.find((t) => t.name.startsWith(name))!;

function readEvents(upstream: Ev[]): IrEvent[] {
  const reader = chatCodec.streamReader();
  const events = upstream.flatMap((e) => reader.push({ event: e.event, data: typeof e.data === "string" ? e.data : JSON.stringify(e.data) }));
  return [...events, ...reader.end()];
}

function writeEvents(events: IrEvent[], created = CREATED): Ev[] {
  const writer = chatCodec.streamWriter({ created });
  return decode(writer.write(events) + writer.end());
}

// ——— what the Anthropic reader must make of the Anthropic clients' requests ———

const weather = { name: "get_weather", description: "Current weather for a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }, param: "tools[0]" };
const time = { name: "get_time", parameters: { type: "object", properties: { tz: { type: "string" } } }, param: "tools[1]" };
const question = { role: "user" as const, parts: [{ type: "text" as const, text: "Weather in Paris and the time in Tokyo?" }], param: "messages[0]" };
const schema = { type: "object", properties: { city: { type: "string" }, celsius: { type: "number" } }, required: ["city", "celsius"], additionalProperties: false };

const ANTHROPIC_REQUESTS_AS_IR: Record<string, IrRequest> = {
  "two-turn tool conversation, turn 1": {
    model: "gpt-5", stream: false, system: ["You answer with tools."], messages: [question], maxTokens: 1024,
    tools: [weather, time], toolChoice: { type: "auto" },
  },
  "two-turn tool conversation, turn 2": {
    model: "gpt-5", stream: false, system: ["You answer with tools."], maxTokens: 1024, tools: [weather, time],
    messages: [
      question,
      {
        role: "assistant", param: "messages[1]",
        parts: [
          { type: "tool_call", id: "call_a", name: "get_weather", arguments: '{"city":"Paris"}' },
          { type: "tool_call", id: "call_b", name: "get_time", arguments: '{"tz":"Asia/Tokyo"}' },
        ],
      },
      {
        role: "user", param: "messages[2]",
        parts: [
          { type: "tool_result", callId: "call_a", name: "get_weather", content: [{ type: "text", text: "18°C, sunny" }] },
          { type: "tool_result", callId: "call_b", name: "get_time", content: [{ type: "text", text: "09:30" }] },
        ],
      },
    ],
  },
  thinking: {
    model: "deepseek-reasoner", stream: false, system: [], maxTokens: 16000, tools: [],
    messages: [{ role: "user", parts: [{ type: "text", text: "What is 17 × 23?" }], param: "messages[0]" }],
    reasoning: { budget: 8000 },
  },
  cached: {
    model: "gpt-5", stream: false, system: ["You are a meteorologist.", "Long reference manual…"], maxTokens: 200, tools: [],
    messages: [{
      role: "user", param: "messages[0]",
      parts: [
        { type: "image", source: { kind: "base64", mediaType: "image/png", data: PNG }, param: "messages[0].content[0]" },
        { type: "image", source: { kind: "url", url: "https://example.com/sky.jpg" }, param: "messages[0].content[1]" },
        { type: "text", text: "Which city is this, and how warm?" },
      ],
    }],
    stop: { sequences: ["END"], param: "stop_sequences" },
    temperature: 0.3, topP: 0.9, topK: 40, user: "u-1",
    output: { type: "json_schema", schema, param: "output_config.format" },
  },
};

describe("golden transcripts, Anthropic client → Chat upstream: the Chat codec's half", () => {
  for (const [name, request] of Object.entries(ANTHROPIC_REQUESTS_AS_IR)) {
    const t = named(ANTHROPIC_CLIENT, name);
    test(`${t.name}: the request sent upstream, plain and streamed`, () => {
      expect(chatCodec.writeRequest(structuredClone(request), context)).toEqual(t.upstreamRequest);
      expect(chatCodec.writeRequest({ ...structuredClone(request), stream: true }, context)).toEqual({ ...t.upstreamRequest, stream: true, stream_options: { include_usage: true } });
    });
  }

  for (const t of ANTHROPIC_CLIENT) {
    test(`${t.name}: the JSON answer and the stream read alike, with the usage the OpenAI reader meters`, () => {
      const answer = chatCodec.readAnswer(structuredClone(t.upstreamJson));
      expect(answer.usage).toEqual(formatOf("openai").usageFromJson(t.upstreamJson)!);
      expect(answerOf(readEvents(t.upstreamSse))).toEqual(answer);
    });
  }

  test("the tool-call turn read exactly", () => {
    const t = named(ANTHROPIC_CLIENT, "two-turn tool conversation, turn 1");
    const calls: IrAnswer["parts"] = [
      { type: "tool_call", id: "call_a", name: "get_weather", arguments: '{"city":"Paris"}' },
      { type: "tool_call", id: "call_b", name: "get_time", arguments: '{"tz":"Asia/Tokyo"}' },
    ];
    const usage = { prompt: 120, completion: 40, cacheRead: 0, cacheWrite: 0, reasoning: 0 };
    expect(chatCodec.readAnswer(t.upstreamJson)).toEqual({ id: "chatcmpl-1", model: "gpt-5", parts: calls, finish: "tool_calls", usage });
    expect(readEvents(t.upstreamSse)).toEqual([
      { type: "start", id: "chatcmpl-1", model: "gpt-5" },
      { type: "tool_call_start", call: 0, id: "call_a", name: "get_weather" },
      { type: "tool_call_arguments", call: 0, delta: '{"ci' },
      { type: "tool_call_arguments", call: 0, delta: 'ty":"Paris"}' },
      { type: "tool_call_start", call: 1, id: "call_b", name: "get_time" },
      { type: "tool_call_arguments", call: 1, delta: '{"tz":"Asia/' },
      { type: "tool_call_arguments", call: 1, delta: 'Tokyo"}' },
      { type: "finish", finish: "tool_calls" },
      { type: "usage", usage },
    ]);
  });

  test("the reasoning answer read exactly (reasoning_content as thinking with no signature)", () => {
    const t = named(ANTHROPIC_CLIENT, "thinking");
    const usage = { prompt: 20, completion: 130, cacheRead: 0, cacheWrite: 0, reasoning: 110 };
    expect(chatCodec.readAnswer(t.upstreamJson)).toEqual({
      id: "chatcmpl-3", model: "deepseek-reasoner", finish: "stop", usage,
      parts: [{ type: "thinking", text: "17 × 20 = 340, 17 × 3 = 51, so 391." }, { type: "text", text: "391" }],
    });
    expect(readEvents(t.upstreamSse)).toEqual([
      { type: "start", id: "chatcmpl-3", model: "deepseek-reasoner" },
      { type: "thinking", text: "17 × 20 = 340, " },
      { type: "thinking", text: "17 × 3 = 51, so 391." },
      { type: "text", text: "391" },
      { type: "finish", finish: "stop" },
      { type: "usage", usage },
    ]);
  });
});

/** A stream's events gathered into the answer they tell (text and thinking deltas joined, calls assembled). */
function answerOf(events: IrEvent[]): IrAnswer {
  const answer: IrAnswer = { id: "", model: "", parts: [], finish: "stop" };
  const calls = new Map<number, { type: "tool_call"; id: string; name: string; arguments: string }>();
  for (const e of events) {
    const last = answer.parts.at(-1);
    if (e.type === "start") Object.assign(answer, { id: e.id, model: e.model });
    else if ((e.type === "text" || e.type === "thinking") && last?.type === e.type) last.text += e.text;
    else if (e.type === "text" || e.type === "thinking") answer.parts.push({ type: e.type, text: e.text });
    else if (e.type === "tool_call_start") {
      const call = { type: "tool_call" as const, id: e.id, name: e.name, arguments: "" };
      calls.set(e.call, call);
      answer.parts.push(call);
    } else if (e.type === "tool_call_arguments") calls.get(e.call)!.arguments += e.delta;
    else if (e.type === "usage") answer.usage = e.usage;
    else if (e.type === "finish") answer.finish = e.finish;
  }
  return answer;
}

// ——— what the Anthropic writer must be given for the Chat clients' requests ———

const OPENAI_REQUESTS_AS_IR: Record<string, IrRequest> = {
  "two-turn tool conversation, turn 1": {
    model: "claude-sonnet-4-5", stream: false, system: ["You answer with tools."], messages: [{ ...question, param: "messages[1]" }],
    tools: [weather, time], toolChoice: { type: "auto" }, parallelToolCalls: true,
  },
  "two-turn tool conversation, turn 2": {
    model: "claude-sonnet-4-5", stream: false, system: ["You answer with tools."], maxTokens: 500, tools: [weather, time], parallelToolCalls: false,
    messages: [
      { ...question, param: "messages[1]" },
      {
        role: "assistant", param: "messages[2]",
        parts: [
          { type: "text", text: "Looking both up." },
          { type: "tool_call", id: "toolu_a", name: "get_weather", arguments: '{"city":"Paris"}' },
          { type: "tool_call", id: "toolu_b", name: "get_time", arguments: '{"tz":"Asia/Tokyo"}' },
        ],
      },
      {
        role: "user", param: "messages[3]",
        parts: [
          { type: "tool_result", callId: "toolu_a", name: "get_weather", content: [{ type: "text", text: "18°C, sunny" }] },
          { type: "tool_result", callId: "toolu_b", name: "get_time", content: [{ type: "text", text: "09:30" }] },
          { type: "text", text: "Keep it short." },
        ],
      },
    ],
  },
  reasoning: {
    model: "claude-opus-4-5", stream: false, system: [], maxTokens: 20000, tools: [], reasoning: { effort: "high" },
    messages: [{ role: "user", parts: [{ type: "text", text: "What is 17 × 23?" }], param: "messages[0]" }],
  },
  cached: {
    model: "claude-sonnet-4-5", stream: false, system: ["You are a meteorologist.", "Long reference manual…"], maxTokens: 200, tools: [],
    messages: [{
      role: "user", param: "messages[1]",
      parts: [
        { type: "image", source: { kind: "base64", mediaType: "image/png", data: PNG }, param: "messages[1].content[0]" },
        { type: "image", source: { kind: "url", url: "https://example.com/sky.jpg" }, param: "messages[1].content[1]" },
        { type: "text", text: "Which city is this, and how warm?" },
      ],
    }],
    stop: { sequences: ["END"], param: "stop" }, temperature: 0.3, topP: 0.9, seed: 7, user: "u-1",
    output: { type: "json_schema", name: "weather", schema, strict: true, param: "response_format" },
  },
};

/** What the Anthropic reader must make of the Anthropic upstream's answers in the Chat client transcripts. */
const ANTHROPIC_ANSWERS_AS_IR: Record<string, IrAnswer> = {
  "two-turn tool conversation, turn 1": {
    id: "msg_1", model: "claude-sonnet-4-5", finish: "tool_calls", usage: { prompt: 300, completion: 60, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
    parts: [
      { type: "text", text: "Looking both up." },
      { type: "tool_call", id: "toolu_a", name: "get_weather", arguments: '{"city":"Paris"}' },
      { type: "tool_call", id: "toolu_b", name: "get_time", arguments: '{"tz":"Asia/Tokyo"}' },
    ],
  },
  "two-turn tool conversation, turn 2": {
    id: "msg_2", model: "claude-sonnet-4-5", finish: "stop", usage: { prompt: 420, completion: 15, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
    parts: [{ type: "text", text: "Paris 18°C, sunny; Tokyo 09:30." }],
  },
  reasoning: {
    id: "msg_3", model: "claude-opus-4-5", finish: "stop", usage: { prompt: 25, completion: 140, cacheRead: 0, cacheWrite: 0, reasoning: 120 },
    parts: [{ type: "thinking", text: "17 × 20 = 340, 17 × 3 = 51, so 391.", signature: { wire: "anthropic-messages", value: "EqQBCkYIBxgCKkA" } }, { type: "text", text: "391" }],
  },
  cached: {
    id: "msg_4", model: "claude-sonnet-4-5", finish: "stop", usage: { prompt: 2000, completion: 14, cacheRead: 1800, cacheWrite: 150, reasoning: 0 },
    parts: [{ type: "text", text: '{"city":"Paris","celsius":18}' }],
  },
};

describe("golden transcripts, Chat client → Anthropic upstream: the Chat codec's half", () => {
  for (const [name, request] of Object.entries(OPENAI_REQUESTS_AS_IR)) {
    const t = named(OPENAI_CLIENT, name);
    test(`${t.name}: the client's request read`, () => {
      expect(chatCodec.readRequest(structuredClone(t.clientRequest), { model: String(t.clientRequest.model), stream: false, upstream: "Anthropic Messages" })).toEqual(request);
    });
  }

  for (const [name, answer] of Object.entries(ANTHROPIC_ANSWERS_AS_IR)) {
    const t = named(OPENAI_CLIENT, name);
    test(`${t.name}: the JSON answer written`, () => {
      expect(chatCodec.writeAnswer(structuredClone(answer), { created: CREATED })).toEqual(t.clientJson);
    });
  }

  for (const t of OPENAI_CLIENT) {
    test(`${t.name}: the client answer and stream read and written back are themselves`, () => {
      expect(chatCodec.writeAnswer(chatCodec.readAnswer(structuredClone(t.clientJson)), { created: CREATED })).toEqual(t.clientJson);
      expect(writeEvents(readEvents(t.clientSse))).toEqual(t.clientSse);
    });
  }

  test("the reasoning stream written from the events an Anthropic reader makes (usage up front, a signature, usage at the end)", () => {
    const t = named(OPENAI_CLIENT, "reasoning");
    const events: IrEvent[] = [
      { type: "start", id: "msg_3", model: "claude-opus-4-5", usage: { prompt: 25, completion: 1, cacheRead: 0, cacheWrite: 0, reasoning: 0 } },
      { type: "thinking", text: "17 × 20 = 340, " },
      { type: "thinking", text: "17 × 3 = 51, so 391." },
      { type: "thinking_signature", signature: { wire: "anthropic-messages", value: "EqQBCkYIBxgCKkA" } },
      { type: "text", text: "391" },
      { type: "usage", usage: { prompt: 25, completion: 140, cacheRead: 0, cacheWrite: 0, reasoning: 120 } },
      { type: "finish", finish: "stop" },
    ];
    expect(writeEvents(events)).toEqual(t.clientSse);
  });

  test("the tool stream written from an Anthropic reader's events (an empty first argument fragment sends nothing)", () => {
    const t = named(OPENAI_CLIENT, "two-turn tool conversation, turn 1");
    const usage = { prompt: 300, completion: 60, cacheRead: 0, cacheWrite: 0, reasoning: 0 };
    const events: IrEvent[] = [
      { type: "start", id: "msg_1", model: "claude-sonnet-4-5", usage: { ...usage, completion: 1 } },
      { type: "text", text: "Looking both up." },
      { type: "tool_call_start", call: 0, id: "toolu_a", name: "get_weather" },
      { type: "tool_call_arguments", call: 0, delta: "" },
      { type: "tool_call_arguments", call: 0, delta: '{"city": ' },
      { type: "tool_call_arguments", call: 0, delta: '"Paris"}' },
      { type: "tool_call_start", call: 1, id: "toolu_b", name: "get_time" },
      { type: "tool_call_arguments", call: 1, delta: '{"tz": "Asia/Tokyo"}' },
      { type: "finish", finish: "tool_calls" },
      { type: "usage", usage },
    ];
    expect(writeEvents(events)).toEqual(t.clientSse);
  });
});

// ——— the whole transcripts, once the Anthropic codec is there ———

const anthropicCodec = codecOf("anthropic-messages");

describe.skipIf(anthropicCodec === undefined)("golden transcripts through the composed translators (Chat codec + Anthropic codec)", () => {
  const directions = anthropicCodec === undefined ? [] : [
    { name: "Anthropic client → Chat upstream", translator: compose(anthropicCodec, chatCodec), transcripts: ANTHROPIC_CLIENT, chatUpstream: true },
    { name: "Chat client → Anthropic upstream", translator: compose(chatCodec, anthropicCodec), transcripts: OPENAI_CLIENT, chatUpstream: false },
  ];
  for (const { name, translator, transcripts, chatUpstream } of directions) {
    for (const t of transcripts) {
      test(`${name}: ${t.name}`, () => {
        expect(translator.request(structuredClone(t.clientRequest), context)).toEqual(t.upstreamRequest);
        const streamed = translator.request({ ...structuredClone(t.clientRequest), stream: true }, context);
        expect(streamed).toEqual({ ...t.upstreamRequest, stream: true, ...(chatUpstream ? { stream_options: { include_usage: true } } : {}) });
        expect(translator.response(structuredClone(t.upstreamJson), { created: CREATED })).toEqual(t.clientJson);
        const stream = translator.stream({ created: CREATED });
        const parts: Uint8Array[] = [];
        const decoder = createSseDecoder((e) => parts.push(stream.push(e)));
        decoder.push(new TextEncoder().encode(sseText(t.upstreamSse)));
        decoder.end();
        parts.push(stream.end());
        expect(decode(parts.map((p) => new TextDecoder().decode(p)).join(""))).toEqual(t.clientSse);
      });
    }
  }
});
