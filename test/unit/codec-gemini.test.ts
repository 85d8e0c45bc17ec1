import { describe, expect, test } from "bun:test";
import { GoogleGenAI } from "@google/genai";
import { GoogleGenAI as GoogleGenAIV3 } from "genai-v3";
import { HttpError } from "../../src/core/errors.ts";
import type { JsonObject } from "../../src/formats/json.ts";
import { createSseDecoder, type SseEvent } from "../../src/formats/sse.ts";
import type { ReadContext } from "../../src/formats/translate/codec.ts";
import { codecOf } from "../../src/formats/translate/codecs/index.ts";
import { callIdOf, originOfCallId } from "../../src/formats/translate/codecs/gemini/call-ids.ts";
import { geminiCodec } from "../../src/formats/translate/codecs/gemini/index.ts";
import type { IrAnswer, IrEvent, IrRequest } from "../../src/formats/translate/ir.ts";
import { CLIENT_IR, CLIENT_REQUEST, PARIS_ID, ROME_ID, SIG_A, SIG_B, UPSTREAM_ANSWER, UPSTREAM_ANSWER_IR, UPSTREAM_SSE, UPSTREAM_SSE_IR } from "../fixtures/translation/gemini.ts";
import { thrownHttpError as thrown } from "../helpers/sse-transcripts.ts";

const UPSTREAM = "Anthropic Messages";
const readContext: ReadContext = { model: "gemini-2.5-pro", stream: true, upstream: UPSTREAM };
const read = (body: JsonObject, context: Partial<ReadContext> = {}) => geminiCodec.readRequest(body, { ...readContext, ...context });
const write = (request: Partial<IrRequest>) => geminiCodec.writeRequest({ model: "gemini-3-pro-preview", stream: false, system: [], messages: [], tools: [], ...request }, { maxTokens: 4096 });
const user = (text: string) => ({ role: "user", parts: [{ text }] });

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

  test("Schema's int64 bounds (strings on Gemini's wire) become JSON Schema integers; other values stay as written", () => {
    const params = (parameters: JsonObject) => read({ contents: [user("x")], tools: [{ functionDeclarations: [{ name: "f", parameters }] }] }).tools[0]!.parameters;
    expect(params({ type: "OBJECT", properties: { a: { type: "ARRAY", items: { type: "STRING", minLength: "1", maxLength: "9" }, minItems: "0", maxItems: "12" } }, minProperties: "1", maxProperties: "2" })).toEqual({
      type: "object",
      properties: { a: { type: "array", items: { type: "string", minLength: 1, maxLength: 9 }, minItems: 0, maxItems: 12 } },
      minProperties: 1,
      maxProperties: 2,
    });
    // Already numbers (a hand-written body), or not a whole number: kept as given.
    expect(params({ type: "ARRAY", minItems: 2, maxItems: "many" })).toEqual({ type: "array", minItems: 2, maxItems: "many" });
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

  test("a text blob of any text type is a text document", () => {
    const ir = read({ contents: [{ parts: [{ inlineData: { mimeType: "text/csv", data: Buffer.from("a,b\n1,2").toString("base64") } }] }] });
    expect(ir.messages[0]!.parts).toEqual([{ type: "document", source: { kind: "text", text: "a,b\n1,2" }, param: "contents[0].parts[0].inlineData" }]);
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
    candidates: { count: 1, param: "n" },
  };

  test("every field is written exactly; model, stream, user, strict, parallel_tool_calls and penalties are not in the body", () => {
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
        seed: 11,
        // presencePenalty and frequencyPenalty dropped: Gemini 2.5 and later refuse them.
        responseMimeType: "application/json",
        responseJsonSchema: { type: "object", properties: { ok: { type: "boolean" } } },
        thinkingConfig: { thinkingBudget: 8192, includeThoughts: true },
      },
    });
  });

  test("several candidates and log probabilities are refused, naming the client's parameter: the answer would bring back neither", () => {
    for (const [extra, param] of [[{ candidates: { count: 2, param: "n" } }, "n"], [{ logprobs: { top: 0, param: "logprobs" } }, "logprobs"]] as const) {
      let error: unknown;
      try {
        write(extra as Partial<IrRequest>);
      } catch (e) {
        error = e;
      }
      expect(error).toMatchObject({ status: 400, param, code: "unsupported_parameter" });
    }
  });

  test("a bare request has contents only: no bound (Gemini needs none), no config", () => {
    expect(write({ messages: [{ role: "user", param: "messages[0]", parts: [{ type: "text", text: "hi" }] }] })).toEqual({ contents: [{ role: "user", parts: [{ text: "hi" }] }] });
  });

  test("tool choices and reasoning", () => {
    const tools = [{ name: "f", parameters: { type: "object" }, param: "tools[0]" }];
    // A conversation with nothing in it is refused: each request says something.
    const messages: IrRequest["messages"] = [{ role: "user", param: "messages[0]", parts: [{ type: "text", text: "hi" }] }];
    const config = (request: Partial<IrRequest>) => {
      const body = write({ tools, messages, ...request });
      return [body.toolConfig, (body.generationConfig as JsonObject | undefined)?.thinkingConfig];
    };
    expect(config({ toolChoice: { type: "auto" } })).toEqual([{ functionCallingConfig: { mode: "AUTO" } }, undefined]);
    expect(config({ toolChoice: { type: "required" } })).toEqual([{ functionCallingConfig: { mode: "ANY" } }, undefined]);
    expect(config({ toolChoice: { type: "none" }, reasoning: { effort: "none" } })).toEqual([{ functionCallingConfig: { mode: "NONE" } }, { thinkingBudget: 0 }]);
    expect(config({ reasoning: { effort: "minimal" } })).toEqual([undefined, { thinkingBudget: 0 }]);
    expect(config({ reasoning: { effort: "high" } })).toEqual([undefined, { thinkingBudget: 16384 }]);
    expect(config({ reasoning: { budget: -1, effort: "low" } })).toEqual([undefined, { thinkingBudget: -1 }]);
    expect(config({ reasoning: { visible: false } })).toEqual([undefined, undefined]);
    // Without tools, a tool choice is not sent.
    expect(write({ messages, toolChoice: { type: "none" } })).toEqual({ contents: [user("hi")] });
    expect((write({ messages, output: { type: "json", param: "response_format" } }).generationConfig as JsonObject)).toEqual({ responseMimeType: "application/json" });
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
    expect(thrown(() => write(refused[0]![1])).message).toBe(`${refused[0]![2]}: An image at a URL whose media type cannot be told from its name cannot be carried to this model's upstream, which speaks Gemini generateContent`);
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

// ——— (c) round trips ———

describe("round trips", () => {
  test("a Gemini request read and written again is itself (signed calls, thoughts, JSON-schema tools)", () => {
    const request: JsonObject = {
      contents: [
        { role: "user", parts: [{ text: "Plan a trip." }, { inlineData: { mimeType: "image/png", data: "iVBOR" } }] },
        {
          role: "model",
          parts: [
            { text: "Thinking about it", thought: true, thoughtSignature: SIG_A },
            { functionCall: { name: "search", args: { q: "Rome" } }, thoughtSignature: SIG_B },
            { functionCall: { name: "search", args: { q: "Paris" } } },
          ],
        },
        { role: "user", parts: [{ functionResponse: { name: "search", response: { hits: 3 } } }, { functionResponse: { name: "search", response: { hits: 0 } } }] },
        { role: "model", parts: [{ text: "Rome it is." }] },
        { role: "user", parts: [{ text: "Book it." }] },
      ],
      systemInstruction: { parts: [{ text: "Be helpful." }] },
      tools: [{ functionDeclarations: [{ name: "search", description: "Search", parametersJsonSchema: { type: "object", properties: { q: { type: "string" } } } }] }],
      toolConfig: { functionCallingConfig: { mode: "AUTO" } },
      generationConfig: { maxOutputTokens: 512, temperature: 1, topP: 0.95, topK: 64, stopSequences: ["x"], seed: 1, responseMimeType: "application/json", responseJsonSchema: { type: "object" }, thinkingConfig: { thinkingBudget: 4096, includeThoughts: true } },
    };
    expect(geminiCodec.writeRequest(read(request), { maxTokens: 4096 })).toEqual(request);
  });

  /** Call ids are the one documented difference: an answer read from Gemini carries ids made to hold signatures. */
  const idsAs = (body: unknown, ids: string[]): unknown => {
    let k = 0;
    return JSON.parse(JSON.stringify(body), (key, value) => (key === "functionCall" && value !== null && typeof value === "object" && !Array.isArray(value) ? { ...value, id: ids[k++] } : value));
  };

  test("a Gemini answer read and written again is itself, but for the call ids", () => {
    const again = geminiCodec.writeAnswer(geminiCodec.readAnswer(UPSTREAM_ANSWER), {});
    const expected = idsAs(UPSTREAM_ANSWER, [PARIS_ID, ROME_ID]) as JsonObject;
    const candidate = (expected.candidates as JsonObject[])[0]!;
    delete candidate.safetyRatings; // Safety ratings have no place in the shared model.
    expect(again).toEqual(expected);
  });

  test("a Gemini stream read and written again is itself, event for event, but for the call ids and zero counts", () => {
    const reader = geminiCodec.streamReader();
    const writer = geminiCodec.streamWriter({});
    const text = UPSTREAM_SSE.map((chunk) => writer.write(reader.push(sse(chunk)))).join("") + writer.write(reader.end()) + writer.end();
    const expected = idsAs(UPSTREAM_SSE, [PARIS_ID, ROME_ID]) as JsonObject[];
    // Usage is rewritten from the normalised counts: a zero count is written (Gemini omits it), cached and thought counts when there are some.
    const usage = (u: JsonObject) => ({ promptTokenCount: u.promptTokenCount, candidatesTokenCount: u.candidatesTokenCount ?? 0, totalTokenCount: u.totalTokenCount, cachedContentTokenCount: u.cachedContentTokenCount, ...(u.thoughtsTokenCount !== undefined && { thoughtsTokenCount: u.thoughtsTokenCount }) });
    for (const chunk of expected) chunk.usageMetadata = usage(chunk.usageMetadata as JsonObject);
    expect(events(text)).toEqual(expected);
  });
});

// ——— (d) upstream answers and streams read into the shared model ———

describe("reading a Gemini upstream's answer", () => {
  test("thoughts, text and parallel calls with their signatures; usage by Gemini's own reader", () => {
    expect(geminiCodec.readAnswer(UPSTREAM_ANSWER)).toEqual(UPSTREAM_ANSWER_IR);
  });

  const finishes: [unknown, boolean, string][] = [
    ["STOP", false, "stop"],
    ["STOP", true, "tool_calls"],
    ["MAX_TOKENS", true, "length"],
    ["SAFETY", false, "content_filter"],
    ["RECITATION", false, "content_filter"],
    ["BLOCKLIST", false, "content_filter"],
    ["PROHIBITED_CONTENT", false, "content_filter"],
    ["SPII", false, "content_filter"],
    ["MALFORMED_FUNCTION_CALL", false, "stop"],
    ["OTHER", false, "stop"],
    [undefined, false, "stop"],
  ];
  for (const [reason, calls, finish] of finishes) {
    test(`finishReason ${String(reason)}${calls ? " with calls" : ""} reads as ${finish}`, () => {
      const parts = calls ? [{ functionCall: { name: "f", args: {} } }] : [{ text: "x" }];
      expect(geminiCodec.readAnswer({ candidates: [{ content: { role: "model", parts }, finishReason: reason }], responseId: "r" }).finish).toBe(finish as IrAnswer["finish"]);
    });
  }

  test("a blocked prompt is an empty answer stopped by the filter", () => {
    const answer = geminiCodec.readAnswer({ promptFeedback: { blockReason: "SAFETY" }, usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 }, modelVersion: "gemini-2.5-flash", responseId: "r-b" });
    expect(answer).toEqual({ id: "r-b", model: "gemini-2.5-flash", parts: [], finish: "content_filter", usage: { prompt: 9, completion: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 } });
  });

  test("odd bodies never throw: an empty answer with a made id", () => {
    for (const body of [undefined, null, "oops", [], { candidates: "x" }, { candidates: [{ content: { parts: [null, 3, { functionCall: { args: {} } }, { inlineData: {} }] } }] }]) {
      const answer = geminiCodec.readAnswer(body);
      expect(answer.parts).toEqual([]);
      expect(answer.finish).toBe("stop");
      expect(answer.id).toMatch(/^gemini-[0-9a-f-]{36}$/);
      expect(answer.usage).toBeUndefined();
    }
  });

  test("calls without id or signature get ids from the answer's id and their order", () => {
    const answer = geminiCodec.readAnswer({ candidates: [{ content: { parts: [{ functionCall: { name: "a", args: { x: 1 } } }, { functionCall: { name: "b" } }] }, finishReason: "STOP" }], responseId: "abc" });
    expect(answer.parts).toEqual([
      { type: "tool_call", id: "call_abc_0", name: "a", arguments: '{"x":1}' },
      { type: "tool_call", id: "call_abc_1", name: "b", arguments: "{}" },
    ]);
  });
});

describe("reading a Gemini upstream's stream", () => {
  test("each event reads as it arrives: deltas, whole calls, cumulative usage, the finish", () => {
    const reader = geminiCodec.streamReader();
    expect(UPSTREAM_SSE.map((chunk) => reader.push(sse(chunk)))).toEqual(UPSTREAM_SSE_IR);
    expect(reader.end()).toEqual([]);
  });

  test("non-JSON events are skipped; usage after the finish still counts; nothing after", () => {
    const reader = geminiCodec.streamReader();
    expect(reader.push(sse(": keep-alive"))).toEqual([]);
    expect(reader.push(sse({ candidates: [{ content: { parts: [{ text: "Hi" }] }, finishReason: "MAX_TOKENS" }], responseId: "r", modelVersion: "m" }))).toEqual([
      { type: "start", id: "r", model: "m" },
      { type: "text", text: "Hi" },
      { type: "finish", finish: "length" },
    ]);
    expect(reader.push(sse({ usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1 } }))).toEqual([{ type: "usage", usage: { prompt: 3, completion: 1, cacheRead: 0, cacheWrite: 0, reasoning: 0 } }]);
    expect(reader.push(sse({ candidates: [{ content: { parts: [{ text: "late" }] } }] }))).toEqual([]);
    expect(reader.end()).toEqual([]);
  });

  test("an error event ends the stream with the error Google's status names", () => {
    const reader = geminiCodec.streamReader();
    reader.push(sse({ candidates: [{ content: { parts: [{ text: "Hi" }] } }], responseId: "r" }));
    const out = reader.push(sse({ error: { code: 429, message: "Resource has been exhausted", status: "RESOURCE_EXHAUSTED" } }));
    expect(out).toHaveLength(1);
    const event = out[0] as Extract<IrEvent, { type: "error" }>;
    expect([event.type, event.error.kind, event.error.status, event.error.message]).toEqual(["error", "rate_limit", 429, "Resource has been exhausted"]);
    expect(reader.push(sse({ candidates: [{ content: { parts: [{ text: "more" }] } }] }))).toEqual([]);
    expect(reader.end()).toEqual([]);
  });

  test("a stream cut before its finish ends as what came: the calls made", () => {
    const reader = geminiCodec.streamReader();
    reader.push(sse({ candidates: [{ content: { parts: [{ functionCall: { name: "f", args: { a: 1 } } }] } }], responseId: "cut" }));
    expect(reader.end()).toEqual([{ type: "finish", finish: "tool_calls" }]);
    const empty = geminiCodec.streamReader();
    const out = empty.end();
    expect(out.map((e) => e.type)).toEqual(["start", "finish"]);
  });

  test("a blocked prompt in a stream finishes by the filter", () => {
    expect(geminiCodec.streamReader().push(sse({ promptFeedback: { blockReason: "PROHIBITED_CONTENT" }, responseId: "b", modelVersion: "m" }))).toEqual([
      { type: "start", id: "b", model: "m" },
      { type: "finish", finish: "content_filter" },
    ]);
  });
});

// ——— (e) answers and streams written for a Gemini client ———

/** An answer as another provider's reader gives it (Anthropic's: its signatures, its ids). */
const FOREIGN_ANSWER: IrAnswer = {
  id: "msg_01",
  model: "claude-sonnet-4-5",
  parts: [
    { type: "thinking", text: "Two cities.", signature: { wire: "anthropic-messages", value: "EqQB" } },
    { type: "redacted_thinking", signature: { wire: "anthropic-messages", value: "EmwK" } },
    { type: "text", text: "Checking." },
    { type: "tool_call", id: "toolu_01", name: "get_weather", arguments: '{"city":"Paris"}' },
    { type: "tool_call", id: "toolu_02", name: "get_weather", arguments: '{"city":"Rome"}' },
  ],
  finish: "tool_calls",
  usage: { prompt: 1200, completion: 80, cacheRead: 1000, cacheWrite: 100, reasoning: 20 },
};

const FOREIGN_ANSWER_JSON = {
  candidates: [
    {
      content: {
        role: "model",
        parts: [
          { text: "Two cities.", thought: true },
          { text: "Checking." },
          { functionCall: { id: "toolu_01", name: "get_weather", args: { city: "Paris" } } },
          { functionCall: { id: "toolu_02", name: "get_weather", args: { city: "Rome" } } },
        ],
      },
      finishReason: "STOP",
      index: 0,
    },
  ],
  usageMetadata: { promptTokenCount: 1200, candidatesTokenCount: 60, totalTokenCount: 1280, cachedContentTokenCount: 1000, thoughtsTokenCount: 20 },
  modelVersion: "claude-sonnet-4-5",
  responseId: "msg_01",
};

/**
 * A stream as a Chat upstream's reader gives it: two parallel calls whose arguments
 * arrive in fragments, interleaved, then the finish, and the usage after it.
 */
const FOREIGN_EVENTS: IrEvent[][] = [
  [{ type: "start", id: "chatcmpl-1", model: "gpt-5" }, { type: "thinking", text: "" }],
  [{ type: "thinking", text: "Two " }],
  [{ type: "thinking", text: "cities." }, { type: "thinking_signature", signature: { wire: "openai-responses", value: "enc" } }],
  [{ type: "text", text: "Check" }, { type: "text", text: "ing." }],
  [{ type: "tool_call_start", call: 0, id: "call_a", name: "get_weather" }, { type: "tool_call_arguments", call: 0, delta: '{"city":' }],
  [{ type: "tool_call_start", call: 1, id: "call_b", name: "get_weather" }, { type: "tool_call_arguments", call: 1, delta: '{"city":"Ro' }],
  [{ type: "tool_call_arguments", call: 0, delta: '"Paris"}' }],
  [{ type: "tool_call_arguments", call: 1, delta: 'me"}' }],
  [{ type: "finish", finish: "tool_calls" }],
  [{ type: "usage", usage: { prompt: 50, completion: 30, cacheRead: 10, cacheWrite: 0, reasoning: 8 } }],
];

const chunk = (parts: JsonObject[] | undefined, extra: JsonObject = {}) => ({
  candidates: [{ ...(parts && { content: { role: "model", parts } }), ...extra, index: 0 }],
  modelVersion: "gpt-5",
  responseId: "chatcmpl-1",
});

/** What each batch of FOREIGN_EVENTS writes: a call goes out whole, once a later part has started and its arguments are complete. */
const FOREIGN_SSE: unknown[][] = [
  [],
  [chunk([{ text: "Two ", thought: true }])],
  [chunk([{ text: "cities.", thought: true }])],
  [chunk([{ text: "Checking." }])],
  [],
  [],
  [chunk([{ functionCall: { id: "call_a", name: "get_weather", args: { city: "Paris" } } }])],
  [],
  [chunk([{ functionCall: { id: "call_b", name: "get_weather", args: { city: "Rome" } } }])],
  [{ ...chunk(undefined, { finishReason: "STOP" }), usageMetadata: { promptTokenCount: 50, candidatesTokenCount: 22, totalTokenCount: 80, cachedContentTokenCount: 10, thoughtsTokenCount: 8 } }],
];

describe("writing for a Gemini client", () => {
  test("an answer: thoughts without foreign signatures, hidden reasoning left out, calls with parsed args, usage in Gemini's counts", () => {
    expect(geminiCodec.writeAnswer(FOREIGN_ANSWER, {})).toEqual(FOREIGN_ANSWER_JSON);
  });

  test("finish reasons", () => {
    const reasonOf = (finish: IrAnswer["finish"]) => ((geminiCodec.writeAnswer({ id: "i", model: "m", parts: [], finish }, {}).candidates as JsonObject[])[0]!).finishReason;
    expect(["stop", "stop_sequence", "tool_calls", "pause", "length", "content_filter"].map((f) => reasonOf(f as IrAnswer["finish"]))).toEqual(["STOP", "STOP", "STOP", "STOP", "MAX_TOKENS", "SAFETY"]);
  });

  test("a call whose arguments are not a JSON object is written with empty args", () => {
    const body = geminiCodec.writeAnswer({ id: "i", model: "m", parts: [{ type: "tool_call", id: "c", name: "f", arguments: "{broken" }], finish: "tool_calls" }, {});
    expect(((body.candidates as JsonObject[])[0]!.content as JsonObject).parts).toEqual([{ functionCall: { id: "c", name: "f", args: {} } }]);
  });

  test("a stream, batch by batch: deltas as they come, each call whole once complete, the finish with the usage that follows it", () => {
    const writer = geminiCodec.streamWriter({});
    const written = FOREIGN_EVENTS.map((batch) => writer.write(batch));
    expect(written.map(events)).toEqual(FOREIGN_SSE);
    expect(written.join("")).toContain("\r\n\r\n");
    expect(writer.end()).toBe("");
    expect(writer.fail(new HttpError("upstream", "late"))).toBe("");
  });

  test("a finish with no usage after it goes out at the end, with the usage known; calls still held go out first", () => {
    const writer = geminiCodec.streamWriter({});
    const usage = { prompt: 5, completion: 2, cacheRead: 0, cacheWrite: 0, reasoning: 0 };
    expect(writer.write([{ type: "start", id: "m1", model: "claude", usage }, { type: "tool_call_start", call: 0, id: "toolu_1", name: "f" }, { type: "tool_call_arguments", call: 0, delta: '{"a":' }])).toBe("");
    expect(writer.write([{ type: "usage", usage }])).toBe("");
    const usageMetadata = { promptTokenCount: 5, candidatesTokenCount: 2, totalTokenCount: 7 };
    // The upstream never completed the arguments: the call goes out at the finish with empty args.
    expect(events(writer.write([{ type: "finish", finish: "tool_calls" }]))).toEqual([
      { candidates: [{ content: { role: "model", parts: [{ functionCall: { id: "toolu_1", name: "f", args: {} } }] }, index: 0 }], usageMetadata, modelVersion: "claude", responseId: "m1" },
    ]);
    expect(events(writer.end())).toEqual([{ candidates: [{ finishReason: "STOP", index: 0 }], usageMetadata, modelVersion: "claude", responseId: "m1" }]);
  });

  test("an in-stream error ends the stream in Google's envelope, after the parts already made", () => {
    const writer = geminiCodec.streamWriter({});
    const text = writer.write([{ type: "start", id: "r", model: "m" }, { type: "text", text: "Hel" }, { type: "error", error: new HttpError("rate_limit", "Slow down", { status: 429 }) }]);
    expect(events(text)).toEqual([
      { candidates: [{ content: { role: "model", parts: [{ text: "Hel" }] }, index: 0 }], modelVersion: "m", responseId: "r" },
      { error: { code: 429, message: "Slow down", status: "RESOURCE_EXHAUSTED" } },
    ]);
    expect(writer.write([{ type: "text", text: "lo" }])).toBe("");
    expect(writer.end()).toBe("");
  });

  test("a failure mid-stream is Google's error event", () => {
    const writer = geminiCodec.streamWriter({});
    writer.write([{ type: "start", id: "r", model: "m" }]);
    expect(events(writer.fail(new HttpError("upstream", "The upstream went away")))).toEqual([{ error: { code: 502, message: "The upstream went away", status: "UNAVAILABLE" } }]);
    expect(writer.fail(new HttpError("upstream", "again"))).toBe("");
  });
});

/** Both pinned majors of the SDK: 2.x calls /v1beta, 3.x /v1. */
type GeminiSdk = Pick<GoogleGenAI, "models">;
const SDKS: [string, (baseUrl: string) => GeminiSdk, string][] = [
  ["@google/genai 2.x", (baseUrl) => new GoogleGenAI({ apiKey: "test", httpOptions: { baseUrl } }), "v1beta"],
  ["@google/genai 3.x", (baseUrl) => new GoogleGenAIV3({ apiKey: "test", httpOptions: { baseUrl } }) as unknown as GeminiSdk, "v1"],
];

describe.each(SDKS)("%s reads what the writer makes", (_label, sdk, version) => {
  const serve = (respond: (url: URL) => Response) => Bun.serve({ port: 0, fetch: (req) => respond(new URL(req.url)) });

  test("generateContent: text, function calls and usage", async () => {
    const paths: string[] = [];
    const server = serve((url) => {
      paths.push(url.pathname);
      return Response.json(geminiCodec.writeAnswer(FOREIGN_ANSWER, {}));
    });
    try {
      const ai = sdk(`http://localhost:${server.port}`);
      const answer = await ai.models.generateContent({ model: "gemini-2.5-pro", contents: "Weather?" });
      expect(paths).toEqual([`/${version}/models/gemini-2.5-pro:generateContent`]);
      expect(answer.text).toBe("Checking.");
      expect(answer.functionCalls).toEqual([
        { id: "toolu_01", name: "get_weather", args: { city: "Paris" } },
        { id: "toolu_02", name: "get_weather", args: { city: "Rome" } },
      ]);
      expect(answer.usageMetadata).toEqual(FOREIGN_ANSWER_JSON.usageMetadata);
      expect(answer.responseId).toBe("msg_01");
      expect(answer.candidates?.[0]?.finishReason).toBe("STOP" as never);
    } finally {
      server.stop(true);
    }
  });

  test("generateContentStream: the chunks' text, calls and final usage", async () => {
    const writer = geminiCodec.streamWriter({});
    const body = FOREIGN_EVENTS.map((batch) => writer.write(batch)).join("") + writer.end();
    const server = serve(() => new Response(body, { headers: { "content-type": "text/event-stream" } }));
    try {
      const ai = sdk(`http://localhost:${server.port}`);
      let text = "";
      const calls: unknown[] = [];
      let usage: unknown;
      let finish: unknown;
      for await (const piece of await ai.models.generateContentStream({ model: "gemini-2.5-pro", contents: "Weather?" })) {
        text += piece.text ?? "";
        calls.push(...(piece.functionCalls ?? []));
        usage = piece.usageMetadata ?? usage;
        finish = piece.candidates?.[0]?.finishReason ?? finish;
      }
      expect(text).toBe("Checking.");
      expect(calls).toEqual([
        { id: "call_a", name: "get_weather", args: { city: "Paris" } },
        { id: "call_b", name: "get_weather", args: { city: "Rome" } },
      ]);
      expect(usage).toEqual({ promptTokenCount: 50, candidatesTokenCount: 22, totalTokenCount: 80, cachedContentTokenCount: 10, thoughtsTokenCount: 8 });
      expect(finish).toBe("STOP");
    } finally {
      server.stop(true);
    }
  });
});

// ——— (f) errors both ways ———

describe("errors", () => {
  const cases: [HttpError, number, string][] = [
    [new HttpError("invalid_request", "Bad field", { param: "contents" }), 400, "INVALID_ARGUMENT"],
    [new HttpError("authentication", "Bad key"), 401, "UNAUTHENTICATED"],
    [new HttpError("permission", "No"), 403, "PERMISSION_DENIED"],
    [new HttpError("not_found", "No model"), 404, "NOT_FOUND"],
    [new HttpError("rate_limit", "Slow down"), 429, "RESOURCE_EXHAUSTED"],
    [new HttpError("unavailable", "Overloaded", { status: 529 }), 529, "UNAVAILABLE"],
    [new HttpError("timeout", "Too slow"), 504, "DEADLINE_EXCEEDED"],
  ];
  for (const [error, status, name] of cases) {
    test(`${error.kind} is written as ${status} ${name}`, () => {
      expect(geminiCodec.writeError(error)).toEqual({ status, body: { error: { code: status, message: error.message, status: name } } });
    });
  }

  const upstream: [number, JsonObject, string][] = [
    [400, { error: { code: 400, message: "Invalid JSON payload", status: "INVALID_ARGUMENT" } }, "invalid_request"],
    [403, { error: { code: 403, message: "API key not valid", status: "PERMISSION_DENIED" } }, "permission"],
    [429, { error: { code: 429, message: "Quota exceeded", status: "RESOURCE_EXHAUSTED" } }, "rate_limit"],
    [500, { error: { code: 500, message: "Internal error", status: "INTERNAL" } }, "upstream"],
    [503, { error: { code: 503, message: "The model is overloaded", status: "UNAVAILABLE" } }, "unavailable"],
  ];
  for (const [status, body, kind] of upstream) {
    test(`an upstream ${status} reads as ${kind}, keeping status and message`, () => {
      const error = geminiCodec.readError(status, body);
      expect([error.kind, error.status, error.message]).toEqual([kind, status, String((body.error as JsonObject).message)]);
    });
  }

  test("an upstream error without Google's envelope still has a message", () => {
    const error = geminiCodec.readError(502, "<html>bad gateway</html>");
    expect([error.kind, error.status, error.message]).toEqual(["upstream", 502, "The upstream answered 502"]);
  });
});

describe("through compose", () => {
  test("a Gemini client on a Gemini upstream, all the way: request, answer, stream bytes, error", async () => {
    const { compose } = await import("../../src/formats/translate/compose.ts");
    const t = compose(geminiCodec, geminiCodec);
    expect(t.upstreamTarget("gemini-2.5-flash", true)).toEqual({ path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent", search: "?alt=sse" });
    const body = { contents: [user("hi")], generationConfig: { maxOutputTokens: 10 } };
    expect(t.request(body, { maxTokens: 4096, model: "gemini-2.5-flash", stream: false })).toEqual({ contents: [{ role: "user", parts: [{ text: "hi" }] }], generationConfig: { maxOutputTokens: 10 } });
    const answer = { candidates: [{ content: { role: "model", parts: [{ text: "Hello" }] }, finishReason: "STOP", index: 0 }], usageMetadata: { promptTokenCount: 2, candidatesTokenCount: 1, totalTokenCount: 3 }, modelVersion: "gemini-2.5-flash", responseId: "r" };
    expect(t.response(answer)).toEqual(answer);
    const stream = t.stream();
    const bytes = [stream.push(sse(answer)), stream.end()].map((b) => new TextDecoder().decode(b)).join("");
    expect(events(bytes)).toEqual([answer]);
    expect(t.error(429, { error: { code: 429, message: "Quota", status: "RESOURCE_EXHAUSTED" } })).toEqual({ status: 429, body: { error: { code: 429, message: "Quota", status: "RESOURCE_EXHAUSTED" } } });
  });
});
