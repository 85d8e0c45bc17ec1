import { describe, expect, test } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import AnthropicV0 from "anthropic-v0";
import OpenAI from "openai";
import OpenAIV7 from "openai-v7";
import { HttpError } from "../../src/core/errors.ts";
import type { Family } from "../../src/formats/family.ts";
import type { JsonObject } from "../../src/formats/json.ts";
import { formatOf } from "../../src/formats/registry.ts";
import { createSseDecoder } from "../../src/formats/sse.ts";
import { translatorFor } from "../../src/formats/translate/index.ts";
import type { AnswerContext, Translator } from "../../src/formats/translate/translator.ts";
import { ANTHROPIC_CLIENT, CREATED, MAX_TOKENS, OPENAI_CLIENT, type Ev, type Transcript } from "../fixtures/translation/anthropic-openai.ts";

const anthropicToOpenai = translatorFor("anthropic-messages", "openai-chat")!;
const openaiToAnthropic = translatorFor("openai-chat", "anthropic-messages")!;
const context = { maxTokens: MAX_TOKENS };
const answerContext: AnswerContext = { created: CREATED };

/** SSE text of events, written as each provider writes them. */
function sseText(events: Ev[]): string {
  return events.map((e) => `${e.event === undefined ? "" : `event: ${e.event}\n`}data: ${typeof e.data === "string" ? e.data : JSON.stringify(e.data)}\n\n`).join("");
}

/** Decodes SSE bytes with the router's own decoder into events (JSON data parsed). */
function decode(bytes: Uint8Array): Ev[] {
  const events: Ev[] = [];
  const decoder = createSseDecoder((e) => {
    const data = e.data === "[DONE]" ? e.data : JSON.parse(e.data);
    events.push(e.event === undefined ? { data } : { event: e.event, data });
  });
  decoder.push(bytes);
  decoder.end();
  return events;
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/** Runs an upstream transcript through a stream translator, as the relay would: decoded event by event, then `end()`. */
function translateStream(translator: Translator, upstream: Ev[] | string, options: AnswerContext = answerContext): Uint8Array {
  const stream = translator.stream(options);
  const parts: Uint8Array[] = [];
  const decoder = createSseDecoder((e) => parts.push(stream.push(e)));
  decoder.push(new TextEncoder().encode(typeof upstream === "string" ? upstream : sseText(upstream)));
  decoder.end();
  parts.push(stream.end());
  return concat(parts);
}

/** The usage a family's reader finds in an SSE stream. */
function tapUsage(family: Family, bytes: Uint8Array) {
  const tap = formatOf(family).streamUsageTap();
  const decoder = createSseDecoder((e) => tap.onEvent(e));
  decoder.push(bytes);
  decoder.end();
  return tap.result();
}

const sseResponse = (bytes: Uint8Array) => async () => new Response(bytes.slice(), { headers: { "content-type": "text/event-stream" } });
const jsonResponse = (body: unknown) => async () => new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });

const directions: Array<{ name: string; translator: Translator; transcripts: Transcript[]; client: Family; upstream: Family }> = [
  { name: "Anthropic client → OpenAI Chat upstream", translator: anthropicToOpenai, transcripts: ANTHROPIC_CLIENT, client: "anthropic", upstream: "openai" },
  { name: "OpenAI Chat client → Anthropic upstream", translator: openaiToAnthropic, transcripts: OPENAI_CLIENT, client: "openai", upstream: "anthropic" },
];

for (const { name, translator, transcripts, client, upstream } of directions) {
  describe(`golden transcripts: ${name}`, () => {
    for (const t of transcripts) {
      describe(t.name, () => {
        test("the request sent upstream", () => {
          expect(translator.request(structuredClone(t.clientRequest), context)).toEqual(t.upstreamRequest);
        });

        test("a streamed request asks the upstream to stream (with usage where it must be asked for)", () => {
          const streamed = translator.request({ ...structuredClone(t.clientRequest), stream: true }, context);
          const extra = upstream === "openai" ? { stream: true, stream_options: { include_usage: true } } : { stream: true };
          expect(streamed).toEqual({ ...t.upstreamRequest, ...extra });
        });

        test("the JSON answer", () => {
          expect(translator.response(structuredClone(t.upstreamJson), answerContext)).toEqual(t.clientJson);
        });

        test("the stream, event by event", () => {
          expect(decode(translateStream(translator, t.upstreamSse))).toEqual(t.clientSse);
        });

        test("metering parity: the client format's usage reader finds what the upstream's finds", () => {
          const upstreamUsage = formatOf(upstream).usageFromJson(t.upstreamJson);
          expect(upstreamUsage).toBeDefined();
          expect(formatOf(client).usageFromJson(translator.response(t.upstreamJson, answerContext))).toEqual(upstreamUsage!);
          const upstreamTapped = tapUsage(upstream, new TextEncoder().encode(sseText(t.upstreamSse)));
          expect(tapUsage(client, translateStream(translator, t.upstreamSse))).toEqual(upstreamTapped!);
          // The JSON and the stream of one answer meter alike.
          expect(upstreamTapped).toEqual(upstreamUsage!);
        });
      });
    }
  });
}

/** The request an SDK sends, reduced to what its stream helpers need (the answer is canned). */
const anthropicParams = (t: Transcript) => ({ model: String(t.clientRequest.model), max_tokens: 100, messages: [{ role: "user" as const, content: "x" }] });
const openaiParams = (t: Transcript) => ({ model: String(t.clientRequest.model), messages: [{ role: "user" as const, content: "x" }] });

/** The message as JSON, without the SDK's own `parsed_output` (it parses structured output only when asked to). */
function withoutParsed(message: unknown): unknown {
  const m = JSON.parse(JSON.stringify(message)) as JsonObject;
  delete m.parsed_output;
  return m;
}

describe("the official Anthropic SDKs read what an OpenAI Chat upstream answered", () => {
  const sdks = [
    { name: "@anthropic-ai/sdk 1.x", make: (fetch: () => Promise<Response>) => new Anthropic({ apiKey: "k", baseURL: "http://router.test", maxRetries: 0, fetch }) },
    { name: "@anthropic-ai/sdk 0.x", make: (fetch: () => Promise<Response>) => new AnthropicV0({ apiKey: "k", baseURL: "http://router.test", maxRetries: 0, fetch }) as unknown as Anthropic },
  ];
  for (const sdk of sdks) {
    for (const t of ANTHROPIC_CLIENT) {
      test(`${sdk.name}: ${t.name}: the stream helper's final message is the JSON answer`, async () => {
        const bytes = translateStream(anthropicToOpenai, t.upstreamSse);
        const final = await sdk.make(sseResponse(bytes)).messages.stream(anthropicParams(t)).finalMessage();
        expect(withoutParsed(final)).toEqual(t.clientJson);
        const created = await sdk.make(jsonResponse(anthropicToOpenai.response(t.upstreamJson))).messages.create(anthropicParams(t));
        expect(withoutParsed(created)).toEqual(t.clientJson);
      });
    }
    test(`${sdk.name}: a translated mid-stream failure raises the SDK's error`, async () => {
      const stream = anthropicToOpenai.stream();
      const first = ANTHROPIC_CLIENT[1]!.upstreamSse[1]!;
      const bytes = concat([stream.push({ event: undefined, data: JSON.stringify(first.data) }), stream.fail(new HttpError("unavailable", "upstream overloaded")), stream.end()]);
      const run = sdk.make(sseResponse(bytes)).messages.stream(anthropicParams(ANTHROPIC_CLIENT[1]!)).finalMessage();
      await expect(run).rejects.toThrow("upstream overloaded");
    });
  }
});

/**
 * A completion reduced to what the stream helper and a JSON answer must agree on: tool-call
 * arguments compared as JSON values (a stream passes the model's own JSON text on verbatim,
 * spacing included), and without `reasoning_content`, which the helper does not accumulate
 * (it keeps an unknown delta field's last value, as against any OpenAI-compatible reasoning
 * server; the test checks its deltas instead).
 */
function comparable(completion: unknown): unknown {
  const c = JSON.parse(JSON.stringify(completion)) as JsonObject;
  for (const choice of c.choices as JsonObject[]) {
    const message = choice.message as JsonObject;
    delete message.parsed;
    delete message.reasoning_content;
    if (message.refusal === undefined) message.refusal = null;
    for (const call of (message.tool_calls ?? []) as Array<{ function: { arguments: unknown } }>) call.function.arguments = JSON.parse(String(call.function.arguments));
  }
  return c;
}

describe("the official OpenAI SDKs read what an Anthropic upstream answered", () => {
  const sdks = [
    { name: "openai 6", make: (fetch: () => Promise<Response>) => new OpenAI({ apiKey: "k", baseURL: "http://router.test/v1", maxRetries: 0, fetch }) },
    { name: "openai 7", make: (fetch: () => Promise<Response>) => new OpenAIV7({ apiKey: "k", baseURL: "http://router.test/v1", maxRetries: 0, fetch }) as unknown as OpenAI },
  ];
  for (const sdk of sdks) {
    for (const t of OPENAI_CLIENT) {
      test(`${sdk.name}: ${t.name}: the stream helper's final completion is the JSON answer`, async () => {
        const bytes = translateStream(openaiToAnthropic, t.upstreamSse);
        let reasoning = "";
        const stream = sdk.make(sseResponse(bytes)).chat.completions.stream(openaiParams(t));
        stream.on("chunk", (chunk) => {
          reasoning += (chunk.choices[0]?.delta as { reasoning_content?: string } | undefined)?.reasoning_content ?? "";
        });
        const final = await stream.finalChatCompletion();
        expect(comparable(final)).toEqual(comparable(t.clientJson));
        const expectedMessage = (t.clientJson.choices as Array<{ message: JsonObject }>)[0]!.message;
        expect(reasoning).toBe(String(expectedMessage.reasoning_content ?? ""));
        const created = await sdk.make(jsonResponse(openaiToAnthropic.response(t.upstreamJson, answerContext))).chat.completions.create(openaiParams(t));
        expect(JSON.parse(JSON.stringify(created))).toEqual(t.clientJson);
      });
    }
    test(`${sdk.name}: a translated mid-stream failure raises the SDK's error`, async () => {
      const upstreamEvents = OPENAI_CLIENT[1]!.upstreamSse.slice(0, 3);
      const stream = openaiToAnthropic.stream(answerContext);
      const parts = upstreamEvents.map((e) => stream.push({ event: e.event, data: JSON.stringify(e.data) }));
      const bytes = concat([...parts, stream.fail(new HttpError("unavailable", "upstream overloaded")), stream.end()]);
      const run = sdk.make(sseResponse(bytes)).chat.completions.stream(openaiParams(OPENAI_CLIENT[1]!)).finalChatCompletion();
      await expect(run).rejects.toThrow("upstream overloaded");
    });
  }
});
