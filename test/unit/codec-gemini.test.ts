import { describe, expect, test } from "bun:test";
import { GoogleGenAI } from "@google/genai";
import { HttpError } from "../../src/core/errors.ts";
import type { JsonObject } from "../../src/formats/json.ts";
import { createSseDecoder, type SseEvent } from "../../src/formats/sse.ts";
import type { ReadContext } from "../../src/formats/translate/codec.ts";
import { codecOf } from "../../src/formats/translate/codecs/index.ts";
import { callIdOf, originOfCallId } from "../../src/formats/translate/codecs/gemini/call-ids.ts";
import { geminiCodec } from "../../src/formats/translate/codecs/gemini/index.ts";
import type { IrAnswer, IrEvent, IrRequest } from "../../src/formats/translate/ir.ts";
import { CLIENT_IR, CLIENT_REQUEST, PARIS_ID, ROME_ID, SIG_A, SIG_B, UPSTREAM_ANSWER, UPSTREAM_ANSWER_IR, UPSTREAM_SSE, UPSTREAM_SSE_IR } from "../fixtures/translation/gemini.ts";

const UPSTREAM = "Anthropic Messages";
const readContext: ReadContext = { model: "gemini-2.5-pro", stream: true, upstream: UPSTREAM };
const read = (body: JsonObject, context: Partial<ReadContext> = {}) => geminiCodec.readRequest(body, { ...readContext, ...context });
const write = (request: Partial<IrRequest>) => geminiCodec.writeRequest({ model: "gemini-3-pro-preview", stream: false, system: [], messages: [], tools: [], ...request }, { maxTokens: 4096 });
const user = (text: string) => ({ role: "user", parts: [{ text }] });

/** The error a call throws (fails the test when it throws none). */
function thrown(run: () => unknown): HttpError {
  try {
    run();
  } catch (error) {
    if (error instanceof HttpError) return error;
    throw error;
  }
  throw new Error("expected an HttpError");
}

const sse = (data: unknown): SseEvent => ({ event: undefined, data: typeof data === "string" ? data : JSON.stringify(data) });

/** SSE text parsed back with the router's decoder into the events' JSON. */
function events(text: string): unknown[] {
  const out: unknown[] = [];
  const decoder = createSseDecoder((e) => out.push(JSON.parse(e.data)));
  decoder.push(new TextEncoder().encode(text));
  decoder.end();
  return out;
}

test("the codec is registered for gemini-generate and names its format", () => {
  expect(codecOf("gemini-generate")).toBe(geminiCodec);
  expect(geminiCodec.name).toBe("Gemini generateContent");
  expect(geminiCodec.target("gemini-3-pro-preview", true)).toEqual({ path: "/v1beta/models/gemini-3-pro-preview:streamGenerateContent", search: "?alt=sse" });
  expect(geminiCodec.target("gemini-3-pro-preview", false)).toEqual({ path: "/v1beta/models/gemini-3-pro-preview:generateContent", search: "" });
});

// ——— (a) client requests read into the shared model ———

describe("reading a Gemini client's request", () => {
  test("every mapped field reads into the exact model; the model and stream flag come from the path", () => {
    expect(read(CLIENT_REQUEST)).toEqual(CLIENT_IR);
  });

  test("a minimal request: a missing role is the user's, no config gives no fields", () => {
    expect(read({ contents: [{ parts: [{ text: "hi" }] }] }, { stream: false, model: "m" })).toEqual({
      model: "m",
      stream: false,
      system: [],
      messages: [{ role: "user", param: "contents[0]", parts: [{ type: "text", text: "hi" }] }],
      tools: [],
    });
  });

  test("function calling modes: AUTO and VALIDATED are auto, NONE none, ANY required (limited to several names: those tools only)", () => {
    const tools = [{ functionDeclarations: [{ name: "a" }, { name: "b" }, { name: "c" }] }];
    const choiceOf = (config: JsonObject) => {
      const ir = read({ contents: [user("x")], tools, toolConfig: { functionCallingConfig: config } });
      return { choice: ir.toolChoice, tools: ir.tools.map((t) => t.name) };
    };
    expect(choiceOf({ mode: "AUTO" })).toEqual({ choice: { type: "auto" }, tools: ["a", "b", "c"] });
    expect(choiceOf({})).toEqual({ choice: { type: "auto" }, tools: ["a", "b", "c"] });
    expect(choiceOf({ mode: "VALIDATED" })).toEqual({ choice: { type: "auto" }, tools: ["a", "b", "c"] });
    expect(choiceOf({ mode: "NONE", allowedFunctionNames: ["a"] })).toEqual({ choice: { type: "none" }, tools: ["a", "b", "c"] });
    expect(choiceOf({ mode: "ANY" })).toEqual({ choice: { type: "required" }, tools: ["a", "b", "c"] });
    expect(choiceOf({ mode: "ANY", allowedFunctionNames: ["a", "c"] })).toEqual({ choice: { type: "required" }, tools: ["a", "c"] });
    expect(choiceOf({ mode: "AUTO", allowedFunctionNames: ["b"] })).toEqual({ choice: { type: "auto" }, tools: ["b"] });
    // A declaration without parameters takes no arguments.
    expect(read({ contents: [user("x")], tools }).tools[0]).toEqual({ name: "a", parameters: { type: "object", properties: {} }, param: "tools[0].functionDeclarations[0]" });
  });

  test("JSON output: a mime type alone is json; responseJsonSchema as given; responseSchema converted", () => {
    const outputOf = (config: JsonObject) => read({ contents: [user("x")], generationConfig: config }).output;
    expect(outputOf({ responseMimeType: "application/json" })).toEqual({ type: "json", param: "generationConfig.responseMimeType" });
    expect(outputOf({ responseMimeType: "text/plain" })).toBeUndefined();
    expect(outputOf({ responseMimeType: "application/json", responseJsonSchema: { type: "object", additionalProperties: false } })).toEqual({
      type: "json_schema",
      schema: { type: "object", additionalProperties: false },
      param: "generationConfig.responseJsonSchema",
    });
    expect(outputOf({ responseMimeType: "application/json", responseSchema: { type: "ARRAY", items: { type: "OBJECT", properties: { n: { type: "NUMBER" } }, propertyOrdering: ["n"] } } })).toEqual({
      type: "json_schema",
      schema: { type: "array", items: { type: "object", properties: { n: { type: "number" } } } },
      param: "generationConfig.responseSchema",
    });
  });

  test("thinking levels read as efforts; one candidate is no candidates field; logprobs without a count are top 0", () => {
    const ir = read({ contents: [user("x")], generationConfig: { candidateCount: 1, responseLogprobs: true, thinkingConfig: { thinkingLevel: "MINIMAL" } } });
    expect(ir.reasoning).toEqual({ effort: "minimal" });
    expect(ir.candidates).toBeUndefined();
    expect(ir.logprobs).toEqual({ top: 0, param: "generationConfig.responseLogprobs" });
    expect(read({ contents: [user("x")], generationConfig: { thinkingConfig: { thinkingBudget: 0, includeThoughts: false } } }).reasoning).toEqual({ budget: 0, visible: false });
  });

  test("a thought without text, a signature on a text part (dropped) and a function response answering a call by id", () => {
    const ir = read({
      contents: [
        user("go"),
        { role: "model", parts: [{ thought: true, thoughtSignature: "c2ln" }, { functionCall: { id: "x1", name: "f", args: { a: 1 } } }, { text: "done", thoughtSignature: "dGV4dA==" }] },
        { role: "function", parts: [{ functionResponse: { id: "x1", name: "f", response: { output: 1 } } }] },
      ],
    });
    expect(ir.messages.slice(1)).toEqual([
      {
        role: "assistant",
        param: "contents[1]",
        parts: [{ type: "thinking", text: "", signature: { wire: "gemini-generate", value: "c2ln" } }, { type: "tool_call", id: "x1", name: "f", arguments: '{"a":1}' }, { type: "text", text: "done" }],
      },
      { role: "user", param: "contents[2]", parts: [{ type: "tool_result", callId: "x1", name: "f", content: [{ type: "text", text: '{"output":1}' }] }] },
    ]);
  });

  test("images inside a function response (Gemini 3) ride in the tool result", () => {
    const ir = read({
      contents: [
        { role: "model", parts: [{ functionCall: { name: "shot", args: {} } }] },
        { role: "user", parts: [{ functionResponse: { name: "shot", response: { ok: true }, parts: [{ inlineData: { mimeType: "image/png", data: "AAAA" } }] } }] },
      ],
    });
    expect(ir.messages[1]!.parts).toEqual([
      {
        type: "tool_result",
        callId: "call_0_0",
        name: "shot",
        content: [
          { type: "text", text: '{"ok":true}' },
          { type: "image", source: { kind: "base64", mediaType: "image/png", data: "AAAA" }, param: "contents[1].parts[0].functionResponse.parts[0].inlineData" },
        ],
      },
    ]);
  });

  const refusals: [string, JsonObject, string][] = [
    ["a context cache", { cachedContent: "cachedContents/abc" }, "cachedContent"],
    ["Google Search", { tools: [{ googleSearch: {} }] }, "tools[0].googleSearch"],
    ["Search retrieval", { tools: [{ functionDeclarations: [] }, { googleSearchRetrieval: {} }] }, "tools[1].googleSearchRetrieval"],
    ["code execution", { tools: [{ codeExecution: {} }] }, "tools[0].codeExecution"],
    ["URL context", { tools: [{ urlContext: {} }] }, "tools[0].urlContext"],
    ["file search", { tools: [{ fileSearch: { fileSearchStoreNames: ["s"] } }] }, "tools[0].fileSearch"],
    ["computer use", { tools: [{ computerUse: { environment: "ENVIRONMENT_BROWSER" } }] }, "tools[0].computerUse"],
    ["Google Maps", { tools: [{ googleMaps: {} }] }, "tools[0].googleMaps"],
    ["an unknown tool", { tools: [{ exaAiSearch: {} }] }, "tools[0].exaAiSearch"],
    ["executable code", { contents: [{ role: "model", parts: [{ executableCode: { language: "PYTHON", code: "1" } }] }] }, "contents[0].parts[0].executableCode"],
    ["a code result", { contents: [{ role: "model", parts: [{ codeExecutionResult: { outcome: "OUTCOME_OK" } }] }] }, "contents[0].parts[0].codeExecutionResult"],
    ["video metadata", { contents: [{ parts: [{ fileData: { mimeType: "video/mp4", fileUri: "https://x/v.mp4" }, videoMetadata: { startOffset: "1s" } }] }] }, "contents[0].parts[0].videoMetadata"],
    ["inline audio", { contents: [{ parts: [{ inlineData: { mimeType: "audio/wav", data: "AAAA" } }] }] }, "contents[0].parts[0].inlineData.mimeType"],
    ["a gs:// file", { contents: [{ parts: [{ fileData: { mimeType: "image/png", fileUri: "gs://bucket/a.png" } }] }] }, "contents[0].parts[0].fileData.fileUri"],
    ["a Files API upload", { contents: [{ parts: [{ fileData: { mimeType: "application/pdf", fileUri: "https://generativelanguage.googleapis.com/v1beta/files/abc" } }] }] }, "contents[0].parts[0].fileData.fileUri"],
    ["a video URL", { contents: [{ parts: [{ fileData: { mimeType: "video/mp4", fileUri: "https://www.youtube.com/watch?v=1" } }] }] }, "contents[0].parts[0].fileData.mimeType"],
    ["a function response's file", { contents: [{ role: "model", parts: [{ functionCall: { name: "f" } }] }, { parts: [{ functionResponse: { name: "f", response: {}, parts: [{ fileData: { fileUri: "gs://a" } }] } }] }] }, "contents[1].parts[0].functionResponse.parts[0]"],
    ["image output", { generationConfig: { responseModalities: ["TEXT", "IMAGE"] } }, "generationConfig.responseModalities[1]"],
    ["speech", { generationConfig: { speechConfig: { voiceConfig: {} } } }, "generationConfig.speechConfig"],
    ["enum output", { generationConfig: { responseMimeType: "text/x.enum" } }, "generationConfig.responseMimeType"],
    ["an image in the system instruction", { systemInstruction: { parts: [{ inlineData: { mimeType: "image/png", data: "A" } }] } }, "systemInstruction.parts[0]"],
  ];
  for (const [what, body, param] of refusals) {
    test(`refuses ${what}, naming ${param}`, () => {
      const error = thrown(() => read({ contents: [user("x")], ...body }));
      expect([error.status, error.param, error.code]).toEqual([400, param, "unsupported_parameter"]);
      expect(error.message).toEndWith("which speaks Anthropic Messages");
    });
  }

  const malformed: [string, JsonObject, string][] = [
    ["contents that are not an array", { contents: {} }, "contents"],
    ["an unknown role", { contents: [{ role: "assistant", parts: [{ text: "x" }] }] }, "contents[0].role"],
    ["a content without parts", { contents: [{ role: "user" }] }, "contents[0].parts"],
    ["an empty part", { contents: [{ parts: [{}] }] }, "contents[0].parts[0]"],
    ["text that is not a string", { contents: [{ parts: [{ text: 3 }] }] }, "contents[0].parts[0].text"],
    ["a call without a name", { contents: [{ role: "model", parts: [{ functionCall: { args: {} } }] }] }, "contents[0].parts[0].functionCall"],
    ["call arguments that are not an object", { contents: [{ role: "model", parts: [{ functionCall: { name: "f", args: [1] } }] }] }, "contents[0].parts[0].functionCall.args"],
    ["a response answering no call", { contents: [{ parts: [{ functionResponse: { name: "f", response: {} } }] }] }, "contents[0].parts[0].functionResponse"],
    ["a response that is not an object", { contents: [{ role: "model", parts: [{ functionCall: { name: "f" } }] }, { parts: [{ functionResponse: { name: "f", response: "ok" } }] }] }, "contents[1].parts[0].functionResponse.response"],
    ["inline data without data", { contents: [{ parts: [{ inlineData: { mimeType: "image/png" } }] }] }, "contents[0].parts[0].inlineData"],
    ["a temperature that is not a number", { generationConfig: { temperature: "hot" } }, "generationConfig.temperature"],
    ["stop sequences that are not strings", { generationConfig: { stopSequences: [1] } }, "generationConfig.stopSequences"],
    ["an unknown thinking level", { generationConfig: { thinkingConfig: { thinkingLevel: "EXTREME" } } }, "generationConfig.thinkingConfig.thinkingLevel"],
    ["a fractional thinking budget", { generationConfig: { thinkingConfig: { thinkingBudget: 1.5 } } }, "generationConfig.thinkingConfig.thinkingBudget"],
    ["an unknown calling mode", { toolConfig: { functionCallingConfig: { mode: "SOMETIMES" } } }, "toolConfig.functionCallingConfig.mode"],
    ["allowed names that are not strings", { toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: "f" } } }, "toolConfig.functionCallingConfig.allowedFunctionNames"],
    ["a declaration without a name", { tools: [{ functionDeclarations: [{ description: "x" }] }] }, "tools[0].functionDeclarations[0]"],
    ["tools that are not an array", { tools: {} }, "tools"],
    ["a system instruction without parts", { systemInstruction: { role: "system" } }, "systemInstruction"],
    ["a generation config that is not an object", { generationConfig: 3 }, "generationConfig"],
  ];
  for (const [what, body, param] of malformed) {
    test(`answers 400 to ${what}, naming ${param}`, () => {
      const error = thrown(() => read({ contents: [user("x")], ...body }));
      expect([error.status, error.param, error.code]).toEqual([400, param, "invalid_request"]);
    });
  }
});

// ——— (b) the shared model written as a Gemini request ———

describe("writing a Gemini upstream's request", () => {
  const chatIr: IrRequest = {
    model: "gemini-3-pro-preview",
    stream: true,
    system: ["Be brief.", "Answer in French."],
    messages: [
      {
        role: "user",
        param: "messages[1]",
        parts: [
          { type: "text", text: "What is on these?" },
          { type: "image", source: { kind: "base64", mediaType: "image/webp", data: "UklGR" }, param: "messages[1].content[1]" },
          { type: "image", source: { kind: "url", url: "data:image/png;base64,iVBOR" }, param: "messages[1].content[2]" },
          { type: "image", source: { kind: "url", url: "https://example.com/a/cat.JPG?size=2" }, param: "messages[1].content[3]" },
          { type: "document", source: { kind: "base64", mediaType: "application/pdf", data: "JVBERi0x" }, title: "spec.pdf", param: "messages[1].content[4]" },
          { type: "document", source: { kind: "text", text: "plain notes" }, param: "messages[1].content[5]" },
          { type: "document", source: { kind: "url", url: "https://example.com/report", mediaType: "application/pdf" }, param: "messages[1].content[6]" },
        ],
      },
      {
        role: "assistant",
        param: "messages[2]",
        parts: [
          { type: "thinking", text: "Anthropic's thoughts", signature: { wire: "anthropic-messages", value: "EqQB" } },
          { type: "redacted_thinking", signature: { wire: "anthropic-messages", value: "EmwK" } },
          { type: "thinking", text: "Gemini's thoughts", signature: { wire: "gemini-generate", value: SIG_A } },
          { type: "text", text: "Looking." },
          { type: "tool_call", id: PARIS_ID, name: "get_weather", arguments: '{"city":"Paris"}' },
          { type: "tool_call", id: ROME_ID, name: "get_weather", arguments: '{"city":"Rome"}' },
        ],
      },
      {
        role: "user",
        param: "messages[3]",
        parts: [
          { type: "tool_result", callId: PARIS_ID, content: [{ type: "text", text: '{"temp":18}' }] },
          { type: "tool_result", callId: ROME_ID, name: "get_weather", content: [{ type: "text", text: "station offline" }], isError: true },
        ],
      },
      { role: "user", param: "messages[5]", parts: [{ type: "text", text: "And a chart?" }] },
      {
        role: "assistant",
        param: "messages[6]",
        parts: [
          { type: "tool_call", id: "toolu_01", name: "chart", arguments: '{"kind":"bar"}' },
          { type: "tool_call", id: "toolu_02", name: "chart", arguments: "" },
        ],
      },
      {
        role: "user",
        param: "messages[7]",
        parts: [
          { type: "tool_result", callId: "toolu_01", content: [{ type: "text", text: "drawn" }, { type: "image", source: { kind: "base64", mediaType: "image/png", data: "AAAA" }, param: "messages[7].content[0].content[1]" }] },
          { type: "tool_result", callId: "toolu_02", name: "chart", content: [{ type: "text", text: "[1,2]" }] },
        ],
      },
    ],
    maxTokens: 800,
    temperature: 0.3,
    topP: 0.8,
    topK: 20,
    seed: 11,
    presencePenalty: 0.1,
    frequencyPenalty: 0.2,
    stop: { sequences: ["###"], param: "stop" },
    tools: [
      { name: "get_weather", description: "Weather now", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }, strict: true, param: "tools[0]" },
      { name: "chart", parameters: { type: "object", properties: {} }, param: "tools[1]" },
    ],
    toolChoice: { type: "tool", name: "chart", param: "tool_choice" },
    parallelToolCalls: false,
    reasoning: { effort: "medium", visible: true },
    output: { type: "json_schema", name: "answer", schema: { type: "object", properties: { ok: { type: "boolean" } } }, strict: true, param: "response_format" },
    user: "user-42",
    candidates: { count: 2, param: "n" },
    logprobs: { top: 5, param: "top_logprobs" },
  };

  test("every field is written exactly; model, stream, user, strict and parallel_tool_calls are not in the body", () => {
    expect(geminiCodec.writeRequest(chatIr, { maxTokens: 4096 })).toEqual({
      contents: [
        {
          role: "user",
          parts: [
            { text: "What is on these?" },
            { inlineData: { mimeType: "image/webp", data: "UklGR" } },
            { inlineData: { mimeType: "image/png", data: "iVBOR" } },
            { fileData: { mimeType: "image/jpeg", fileUri: "https://example.com/a/cat.JPG?size=2" } },
            { inlineData: { mimeType: "application/pdf", data: "JVBERi0x" } },
            { text: "plain notes" },
            { fileData: { mimeType: "application/pdf", fileUri: "https://example.com/report" } },
          ],
        },
        {
          role: "model",
          parts: [
            { text: "Gemini's thoughts", thought: true, thoughtSignature: SIG_A },
            { text: "Looking." },
            // The signature and Gemini's id come back out of the ids the answer reader made.
            { functionCall: { name: "get_weather", args: { city: "Paris" } }, thoughtSignature: SIG_B },
            { functionCall: { id: "fc-2", name: "get_weather", args: { city: "Rome" } } },
          ],
        },
        {
          role: "user",
          parts: [
            { functionResponse: { name: "get_weather", response: { temp: 18 } } },
            { functionResponse: { id: "fc-2", name: "get_weather", response: { error: "station offline" } } },
            { text: "And a chart?" },
          ],
        },
        {
          role: "model",
          parts: [
            // Calls another provider made carry no signature: Google's placeholder goes on the first of the step.
            { functionCall: { name: "chart", args: { kind: "bar" } }, thoughtSignature: "skip_thought_signature_validator" },
            { functionCall: { name: "chart", args: {} } },
          ],
        },
        {
          role: "user",
          parts: [
            { functionResponse: { name: "chart", response: { result: "drawn" } } },
            { functionResponse: { name: "chart", response: { result: "[1,2]" } } },
            { inlineData: { mimeType: "image/png", data: "AAAA" } },
          ],
        },
      ],
      systemInstruction: { parts: [{ text: "Be brief." }, { text: "Answer in French." }] },
      tools: [
        {
          functionDeclarations: [
            { name: "get_weather", description: "Weather now", parametersJsonSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } },
            { name: "chart", parametersJsonSchema: { type: "object", properties: {} } },
          ],
        },
      ],
      toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["chart"] } },
      generationConfig: {
        maxOutputTokens: 800,
        temperature: 0.3,
        topP: 0.8,
        topK: 20,
        stopSequences: ["###"],
        candidateCount: 2,
        seed: 11,
        presencePenalty: 0.1,
        frequencyPenalty: 0.2,
        responseMimeType: "application/json",
        responseJsonSchema: { type: "object", properties: { ok: { type: "boolean" } } },
        responseLogprobs: true,
        logprobs: 5,
        thinkingConfig: { thinkingBudget: 8192, includeThoughts: true },
      },
    });
  });

  test("a bare request has contents only: no bound (Gemini needs none), no config", () => {
    expect(write({ messages: [{ role: "user", param: "messages[0]", parts: [{ type: "text", text: "hi" }] }] })).toEqual({ contents: [{ role: "user", parts: [{ text: "hi" }] }] });
  });

  test("tool choices and reasoning", () => {
    const config = (request: Partial<IrRequest>) => {
      const body = write(request);
      return [body.toolConfig, (body.generationConfig as JsonObject | undefined)?.thinkingConfig];
    };
    expect(config({ toolChoice: { type: "auto" } })).toEqual([{ functionCallingConfig: { mode: "AUTO" } }, undefined]);
    expect(config({ toolChoice: { type: "required" } })).toEqual([{ functionCallingConfig: { mode: "ANY" } }, undefined]);
    expect(config({ toolChoice: { type: "none" }, reasoning: { effort: "none" } })).toEqual([{ functionCallingConfig: { mode: "NONE" } }, { thinkingBudget: 0 }]);
    expect(config({ reasoning: { effort: "minimal" } })).toEqual([undefined, { thinkingBudget: 0 }]);
    expect(config({ reasoning: { effort: "high" } })).toEqual([undefined, { thinkingBudget: 16384 }]);
    expect(config({ reasoning: { budget: -1, effort: "low" } })).toEqual([undefined, { thinkingBudget: -1 }]);
    expect(config({ reasoning: { visible: false } })).toEqual([undefined, undefined]);
    expect((write({ output: { type: "json", param: "response_format" }, logprobs: { top: 0, param: "logprobs" } }).generationConfig as JsonObject)).toEqual({ responseMimeType: "application/json", responseLogprobs: true });
  });

  test("a Gemini client's own calls keep their signature; a signed step gets no placeholder", () => {
    const body = write({
      messages: [
        { role: "assistant", param: "contents[1]", parts: [
          { type: "tool_call", id: "call_1_0", name: "f", arguments: "{}", signature: { wire: "gemini-generate", value: SIG_B } },
          { type: "tool_call", id: "call_1_1", name: "f", arguments: "{}" },
        ] },
      ],
    });
    expect(body.contents).toEqual([{ role: "model", parts: [{ functionCall: { name: "f", args: {} }, thoughtSignature: SIG_B }, { functionCall: { name: "f", args: {} } }] }]);
  });

  const refused: [string, Partial<IrRequest>, string, number, string][] = [
    ["an image URL whose type cannot be told", { messages: [{ role: "user", param: "messages[0]", parts: [{ type: "image", source: { kind: "url", url: "https://example.com/image?id=3" }, param: "messages[0].content[1].image_url" }] }] }, "messages[0].content[1].image_url", 400, "unsupported_parameter"],
    ["call arguments that are not an object", { messages: [{ role: "assistant", param: "messages[1]", parts: [{ type: "tool_call", id: "c", name: "f", arguments: "[1" }] }] }, "messages[1].parts[0]", 400, "invalid_request"],
    ["a result of no known call", { messages: [{ role: "user", param: "messages[2]", parts: [{ type: "tool_result", callId: "c9", content: [] }] }] }, "messages[2].parts[0]", 400, "invalid_request"],
  ];
  for (const [what, request, param, status, code] of refused) {
    test(`refuses ${what}, naming ${param}`, () => {
      const error = thrown(() => write(request));
      expect([error.status, error.param, error.code]).toEqual([status, param, code]);
    });
  }
  test("a refusal names the upstream format", () => {
    expect(thrown(() => write(refused[0]![1])).message).toBe("An image at a URL whose media type cannot be told from its name cannot be carried to this model's upstream, which speaks Gemini generateContent");
  });
});

// ——— call ids carrying Gemini's id and signature ———

describe("call ids", () => {
  test("carry Gemini's id and signature in Anthropic's id alphabet, and nothing else decodes", () => {
    const id = callIdOf({ id: "fc/1", signature: SIG_B }, "resp-1", 0);
    expect(id).toMatch(/^gemini_[A-Za-z0-9_-]+$/);
    expect(originOfCallId(id)).toEqual({ id: "fc/1", signature: SIG_B });
    expect(originOfCallId(callIdOf({ signature: SIG_A }, "r", 1))).toEqual({ signature: SIG_A });
    expect(callIdOf({}, "resp.9/x", 2)).toBe("call_resp_9_x_2");
    expect(originOfCallId("call_resp_2")).toBeUndefined();
    expect(originOfCallId("toolu_01A")).toBeUndefined();
    expect(originOfCallId("gemini_bm90LXNlcGFyYXRlZA")).toBeUndefined();
  });
});
