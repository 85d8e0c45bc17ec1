import { describe, expect, test } from "bun:test";
import { cannedAnswer } from "../helpers/format-answers.ts";
import { keyPerFormat } from "../helpers/key-per-format.ts";
import type { KeyFormat } from "../../src/wire/constants.ts";
import { anthropicClient, geminiClient, openaiClient } from "../helpers/sdk.ts";

/**
 * Translation of the less common request parameters (a review): what the upstream of
 * another format receives for stop sequences, sampling, structured output and the
 * like, through the official SDKs against recording mock upstreams. Each test names
 * what the upstream's own API refuses or means, so that a translated call is either
 * carried faithfully or refused by the router in the client's envelope.
 */

const pairs = keyPerFormat("rt");
const ups = pairs.ups;
const up = (format: KeyFormat) => ups.get(format)!;
const answerAs = (format: KeyFormat) => up(format).route("POST", /.*/, (req) => cannedAnswer(format, String(req.json?.model ?? "m"), "ok"));
const sentTo = (format: KeyFormat) => up(format).requests.at(-1)?.json;

const chat = () => openaiClient(pairs.router.url, pairs.router.ownerKey);
const gemini = () => geminiClient(pairs.router.url, pairs.router.ownerKey);
const anthropic = () => anthropicClient(pairs.router.url, pairs.router.ownerKey);
const hi = [{ role: "user" as const, content: "hi" }];

describe("stop sequences towards an Anthropic upstream", () => {
  /**
   * Anthropic's Messages API answers 400 `stop_sequences: each stop sequence must contain
   * non-whitespace` (or `must be non-empty`) to a sequence such as "\n", the commonest
   * stop of OpenAI completion-style clients. Sent as it was, the client saw an upstream
   * 400 counted against the key; the router refuses it in the client's envelope instead,
   * naming its parameter, and sends nothing.
   */
  test("an OpenAI client's stop of a newline is refused naming `stop`; nothing is sent", async () => {
    answerAs("anthropic");
    const error = (await chat().chat.completions.create({ model: "rt-anthropic", messages: hi, stop: ["END", "\n"] }).catch((e: unknown) => e)) as any;
    expect(error.status).toBe(400);
    expect(error.error).toMatchObject({ param: "stop", code: "unsupported_parameter" });
    expect(error.error.message).toContain("Anthropic Messages");
    expect(up("anthropic").requests).toHaveLength(0);
  });

  test("a Gemini client's empty stop sequence is refused in Google's envelope; nothing is sent", async () => {
    answerAs("anthropic");
    const error = (await gemini().models.generateContent({ model: "rt-anthropic", contents: "hi", config: { stopSequences: [""] } }).catch((e: unknown) => e)) as any;
    expect(error.status).toBe(400);
    expect(String(error.message)).toContain("which speaks Anthropic Messages");
    expect(up("anthropic").requests).toHaveLength(0);
  });

  test("sequences with visible characters (around whitespace too) are carried as they are", async () => {
    answerAs("anthropic");
    await chat().chat.completions.create({ model: "rt-anthropic", messages: hi, stop: ["\n\nHuman:", "END"] });
    expect(sentTo("anthropic").stop_sequences).toEqual(["\n\nHuman:", "END"]);
  });
});

describe("temperature and top_p towards an Anthropic upstream", () => {
  /**
   * Anthropic's current models (Sonnet 4.5 onwards, Opus 4.1 onwards, Haiku 4.5) answer
   * 400 "`temperature` and `top_p` cannot both be specified for this model", and its API
   * reference says to alter one or the other, not both. OpenAI clients commonly send both
   * (often one of them at its default of 1), so such a call failed at the upstream. The
   * router sends one: the one that is not at its default, temperature when both are set.
   */
  test("both set: temperature is sent, top_p is not", async () => {
    answerAs("anthropic");
    await chat().chat.completions.create({ model: "rt-anthropic", messages: hi, temperature: 0.4, top_p: 0.9 });
    const sent = sentTo("anthropic");
    expect(sent.temperature).toBe(0.4);
    expect(sent.top_p).toBeUndefined();
  });

  test("temperature left at its default of 1 beside a real top_p: top_p is the one sent", async () => {
    answerAs("anthropic");
    await gemini().models.generateContent({ model: "rt-anthropic", contents: "hi", config: { temperature: 1, topP: 0.5, topK: 20 } });
    const sent = sentTo("anthropic");
    expect(sent.temperature).toBeUndefined();
    expect(sent.top_p).toBe(0.5);
    expect(sent.top_k).toBe(20);
  });

  test("one of them alone is carried", async () => {
    answerAs("anthropic");
    await chat().chat.completions.create({ model: "rt-anthropic", messages: hi, top_p: 0.3 });
    expect(sentTo("anthropic")).toMatchObject({ top_p: 0.3 });
    expect(sentTo("anthropic").temperature).toBeUndefined();
  });
});

describe("a refusal names the client's parameter in every envelope", () => {
  /**
   * OpenAI's envelope has a `param` field; Anthropic's (`{type, error: {type, message}}`)
   * and Google's (`{error: {code, message, status}}`) have none, so a refusal whose
   * message did not say the parameter left an Anthropic or Gemini client guessing which
   * of its fields could not be carried. Anthropic's own messages lead with the field
   * (`stop_sequences: …`), and the router's refusals now say it the same way.
   */
  test("Anthropic client, Responses upstream: stop_sequences is named in the message", async () => {
    answerAs("responses");
    const error = (await anthropic().messages.create({ model: "rt-responses", max_tokens: 50, messages: hi, stop_sequences: ["END"] }).catch((e: unknown) => e)) as any;
    expect(error.status).toBe(400);
    expect(error.error.error.type).toBe("invalid_request_error");
    expect(error.error.error.message).toStartWith("stop_sequences: ");
    expect(up("responses").requests).toHaveLength(0);
  });

  test("Gemini client, Chat upstream: generationConfig.candidateCount is named in the message", async () => {
    answerAs("openai");
    const error = (await gemini().models.generateContent({ model: "rt-openai", contents: "hi", config: { candidateCount: 2 } }).catch((e: unknown) => e)) as any;
    expect(error.status).toBe(400);
    expect(JSON.parse(error.message).error).toMatchObject({ status: "INVALID_ARGUMENT", message: expect.stringMatching(/^generationConfig\.candidateCount: /) });
    expect(up("openai").requests).toHaveLength(0);
  });
});

describe("structured output towards OpenAI upstreams: strict only where OpenAI can enforce it", () => {
  /**
   * OpenAI's strict mode accepts only schemas whose every object sets
   * `additionalProperties: false` and lists every property in `required`; any other schema
   * sent with `strict: true` is a 400 ("Invalid schema for response_format …"). Anthropic
   * (`output_config.format`) and Gemini (`responseSchema`, `responseJsonSchema`) accept
   * optional properties and open objects, and their clients say nothing of strictness, yet
   * the Chat writer sent every such schema with `strict: true`. Now strict is sent when the
   * schema is one OpenAI can enforce (what the Responses API itself does with an omitted
   * `strict`), else `strict: false`; a client's own `strict` is kept.
   */
  const optionalNote = { type: "object", properties: { city: { type: "string" }, note: { type: "string" } }, required: ["city"], additionalProperties: false };
  const closed = { type: "object", properties: { city: { type: "string" }, tags: { type: "array", items: { type: "object", properties: { t: { type: "string" } }, required: ["t"], additionalProperties: false } } }, required: ["city", "tags"], additionalProperties: false };

  test("Anthropic client, an optional property: the Chat upstream gets strict false", async () => {
    answerAs("openai");
    await anthropic().messages.create({ model: "rt-openai", max_tokens: 50, messages: hi, output_config: { format: { type: "json_schema", schema: optionalNote } } });
    expect(sentTo("openai").response_format).toEqual({ type: "json_schema", json_schema: { name: "output", schema: optionalNote, strict: false } });
  });

  test("Gemini client, a responseSchema (no additionalProperties): strict false", async () => {
    answerAs("openai");
    await gemini().models.generateContent({ model: "rt-openai", contents: "hi", config: { responseMimeType: "application/json", responseSchema: { type: "OBJECT" as any, properties: { city: { type: "STRING" as any } }, required: ["city"] } } });
    expect(sentTo("openai").response_format.json_schema.strict).toBe(false);
  });

  test("a schema OpenAI can enforce (nested objects closed, all required) is still sent strict", async () => {
    answerAs("openai");
    await anthropic().messages.create({ model: "rt-openai", max_tokens: 50, messages: hi, output_config: { format: { type: "json_schema", schema: closed } } });
    expect(sentTo("openai").response_format.json_schema.strict).toBe(true);
  });

  test("an Anthropic client's strict tool with an optional parameter reaches Chat and Responses upstreams loose", async () => {
    for (const format of ["openai", "responses"] as const) {
      answerAs(format);
      await anthropic().messages.create({ model: `rt-${format}`, max_tokens: 50, messages: hi, tools: [{ name: "f", input_schema: optionalNote as any, strict: true }] });
      const tool = sentTo(format).tools[0];
      expect(tool.strict ?? tool.function.strict).toBe(false);
    }
  });
});

describe("structured output towards an Anthropic upstream: objects closed as Anthropic requires", () => {
  /**
   * Anthropic's structured outputs (`output_config.format`) take only closed objects:
   * every object needs `additionalProperties: false` (its SDK adds it to every object of
   * a schema before sending, and the API refuses a schema without it). Gemini's
   * `responseSchema` has no such keyword at all and JSON Schemas from OpenAI clients
   * often leave it out, so those schemas reached Anthropic as they were and were refused
   * there. An object that says nothing is now closed (the answer still matches the
   * client's schema); one that asks for other properties (`true`, or a schema for them)
   * cannot be had from Anthropic and is refused, naming the client's parameter.
   */
  test("Gemini client's responseSchema: every object reaches Anthropic closed", async () => {
    answerAs("anthropic");
    const responseSchema = { type: "OBJECT", properties: { city: { type: "STRING" }, tags: { type: "ARRAY", items: { type: "OBJECT", properties: { t: { type: "STRING" } } } } }, required: ["city"] } as any;
    await gemini().models.generateContent({ model: "rt-anthropic", contents: "hi", config: { responseMimeType: "application/json", responseSchema } });
    expect(sentTo("anthropic").output_config.format).toEqual({
      type: "json_schema",
      schema: { type: "object", properties: { city: { type: "string" }, tags: { type: "array", items: { type: "object", properties: { t: { type: "string" } }, additionalProperties: false } } }, required: ["city"], additionalProperties: false },
    });
  });

  test("an OpenAI client's map schema (additionalProperties a schema) is refused naming response_format", async () => {
    answerAs("anthropic");
    const schema = { type: "object", properties: { scores: { type: "object", additionalProperties: { type: "number" } } }, required: ["scores"], additionalProperties: false };
    const error = (await chat().chat.completions.create({ model: "rt-anthropic", messages: hi, response_format: { type: "json_schema", json_schema: { name: "s", schema } } }).catch((e: unknown) => e)) as any;
    expect(error.status).toBe(400);
    expect(error.error).toMatchObject({ param: "response_format", code: "unsupported_parameter" });
    expect(up("anthropic").requests).toHaveLength(0);
  });
});

describe("media another provider cannot read are refused by the router, not by the upstream", () => {
  /**
   * Anthropic's image blocks take only image/jpeg, image/png, image/gif and image/webp
   * (the SDK's `Base64ImageSource.media_type`), and its base64 documents only PDFs.
   * A Gemini client's HEIC photo, or a Responses client's Word file (OpenAI reads many
   * file types), went to Anthropic as they were and were refused there; Gemini reads
   * PDFs and text as documents, not a Word file. The Chat writer already refused such
   * documents by name; the Anthropic and Gemini writers now do too.
   */
  const png1x1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
  const docx = `data:application/vnd.openxmlformats-officedocument.wordprocessingml.document;base64,UEsDBA==`;

  test("a Gemini client's HEIC image towards Anthropic is refused naming its part", async () => {
    answerAs("anthropic");
    const error = (await gemini().models.generateContent({ model: "rt-anthropic", contents: [{ role: "user", parts: [{ text: "what is it?" }, { inlineData: { mimeType: "image/heic", data: png1x1 } }] }] }).catch((e: unknown) => e)) as any;
    expect(error.status).toBe(400);
    expect(JSON.parse(error.message).error.message).toStartWith("contents[0].parts[1]");
    expect(up("anthropic").requests).toHaveLength(0);
  });

  test("a Responses client's Word file towards Anthropic and towards Gemini is refused naming its part", async () => {
    for (const format of ["anthropic", "gemini"] as const) {
      answerAs(format);
      const error = (await chat().responses.create({ model: `rt-${format}`, input: [{ role: "user", content: [{ type: "input_text", text: "summarise" }, { type: "input_file", filename: "a.docx", file_data: docx }] }] }).catch((e: unknown) => e)) as any;
      expect(error.status).toBe(400);
      expect(error.error).toMatchObject({ param: "input[0].content[1]", code: "unsupported_parameter" });
      expect(up(format).requests).toHaveLength(0);
    }
  });

  test("a PNG and a PDF still travel to both", async () => {
    for (const format of ["anthropic", "gemini"] as const) {
      answerAs(format);
      await chat().responses.create({ model: `rt-${format}`, input: [{ role: "user", content: [{ type: "input_image", image_url: `data:image/png;base64,${png1x1}`, detail: "auto" }, { type: "input_file", filename: "a.pdf", file_data: "data:application/pdf;base64,JVBERi0xLjQK" }] }] });
      expect(up(format).requests).toHaveLength(1);
    }
  });
});

describe("JSON mode without a schema from a Gemini client", () => {
  /**
   * Gemini's `responseMimeType: "application/json"` alone makes the answer JSON whatever
   * the prompt says. OpenAI's JSON mode (`json_object`, Chat and Responses) refuses a
   * request whose messages do not contain the word "json" (400 "'messages' must contain
   * the word 'json' in some form…"), and Anthropic has no JSON mode at all: the router
   * dropped it, on the ground that "the formats that have it require the prompt to ask
   * for JSON", which Gemini's does not. So a Gemini client got an upstream 400 from
   * OpenAI, or prose from Anthropic where it parses JSON. The router now says it in the
   * instructions when the conversation does not: OpenAI's JSON mode is then accepted,
   * and Anthropic is asked for JSON only.
   */
  const jsonMode = { responseMimeType: "application/json" };

  test("towards Chat and Responses: JSON mode is sent, with the word json in the instructions", async () => {
    for (const format of ["openai", "responses"] as const) {
      answerAs(format);
      await gemini().models.generateContent({ model: `rt-${format}`, contents: "List three colours.", config: jsonMode });
      const sent = sentTo(format);
      if (format === "openai") {
        expect(sent.response_format).toEqual({ type: "json_object" });
        expect(JSON.stringify(sent.messages).toLowerCase()).toContain("json");
      } else {
        expect(sent.text.format).toEqual({ type: "json_object" });
        expect(String(sent.instructions).toLowerCase()).toContain("json");
      }
    }
  });

  test("towards Anthropic: the instructions ask for JSON only", async () => {
    answerAs("anthropic");
    await gemini().models.generateContent({ model: "rt-anthropic", contents: "List three colours.", config: { ...jsonMode, systemInstruction: "Be brief." } });
    const system = sentTo("anthropic").system as Array<{ text: string }>;
    expect(system[0]!.text).toBe("Be brief.");
    expect(system.at(-1)!.text).toMatch(/JSON/);
  });

  test("a conversation that already asks for JSON is sent as it is to OpenAI", async () => {
    answerAs("openai");
    await gemini().models.generateContent({ model: "rt-openai", contents: "List three colours as a JSON array.", config: jsonMode });
    expect(sentTo("openai").messages).toEqual([{ role: "user", content: "List three colours as a JSON array." }]);
  });
});

describe("stop sequences towards a Gemini upstream", () => {
  /**
   * Gemini takes at most five stop sequences (its reference: "up to 5"; more is a 400
   * "the number of stop_sequences must not exceed 5"). Anthropic clients may send more
   * (Anthropic sets no such bound), and they went to Gemini as they were. Refused now,
   * naming the client's parameter; five still travel.
   */
  test("six of an Anthropic client's stop sequences are refused naming stop_sequences; five are carried", async () => {
    answerAs("gemini");
    const six = ["a1", "b2", "c3", "d4", "e5", "f6"];
    const error = (await anthropic().messages.create({ model: "rt-gemini", max_tokens: 50, messages: hi, stop_sequences: six }).catch((e: unknown) => e)) as any;
    expect(error.status).toBe(400);
    expect(error.error.error.message).toStartWith("stop_sequences: ");
    expect(up("gemini").requests).toHaveLength(0);
    await anthropic().messages.create({ model: "rt-gemini", max_tokens: 50, messages: hi, stop_sequences: six.slice(0, 5) });
    expect(sentTo("gemini").generationConfig.stopSequences).toEqual(six.slice(0, 5));
  });
});

describe("a prefilled answer towards Anthropic", () => {
  /**
   * A conversation that ends with the assistant's words asks the model to continue them
   * (Anthropic's prefill). Anthropic refuses such a last assistant turn when it ends in
   * whitespace (400 "final assistant content cannot end with trailing whitespace"), and
   * OpenAI and Gemini clients often leave a space or newline at the end of the words they
   * start the answer with. The trailing whitespace of that last turn is now left out; the
   * model continues the same words.
   */
  test("an OpenAI client's final assistant message ending in a space reaches Anthropic without it", async () => {
    answerAs("anthropic");
    await chat().chat.completions.create({ model: "rt-anthropic", messages: [{ role: "user", content: "Name a colour." }, { role: "assistant", content: "My answer is " }] });
    expect(sentTo("anthropic").messages.at(-1)).toEqual({ role: "assistant", content: [{ type: "text", text: "My answer is" }] });
  });

  test("earlier assistant turns keep their whitespace", async () => {
    answerAs("anthropic");
    await gemini().models.generateContent({ model: "rt-anthropic", contents: [{ role: "user", parts: [{ text: "a" }] }, { role: "model", parts: [{ text: "b \n" }] }, { role: "user", parts: [{ text: "c" }] }, { role: "model", parts: [{ text: "d\n" }] }] });
    expect(sentTo("anthropic").messages.map((m: any) => m.content[0].text)).toEqual(["a", "b \n", "c", "d"]);
  });
});

describe("temperature and top_p towards Anthropic: the client's own temperature decides", () => {
  /** A Gemini temperature of 2 is capped to Anthropic's 1, but it was not left at its default: it is the one sent. */
  test("a Gemini client's hottest temperature beside a top_p: the (capped) temperature is sent", async () => {
    answerAs("anthropic");
    await gemini().models.generateContent({ model: "rt-anthropic", contents: "hi", config: { temperature: 2, topP: 0.3 } });
    expect(sentTo("anthropic")).toMatchObject({ temperature: 1 });
    expect(sentTo("anthropic").top_p).toBeUndefined();
  });
});

describe("thinking budgets towards a Gemini upstream", () => {
  /**
   * Gemini's thinking budgets are bounded per model: 0 to 24576 for 2.5 Flash, 128 to
   * 32768 for 2.5 Pro; above, a 400 ("thinking_budget is out of range; supported values
   * are integers from 1 to 24576"). The shared table gave `xhigh` and `max` 32768, and an
   * Anthropic client's budget went as it was (Claude Code's deepest thinking asks for
   * 31999), so Flash refused them. A budget is a ceiling the model may not reach, so it is
   * now capped at 24576, which every Gemini 2.5 model takes.
   */
  test("an OpenAI client's xhigh effort and an Anthropic client's 31999 budget reach Gemini as 24576", async () => {
    answerAs("gemini");
    await chat().chat.completions.create({ model: "rt-gemini", messages: hi, reasoning_effort: "xhigh" as any });
    expect(sentTo("gemini").generationConfig.thinkingConfig).toEqual({ thinkingBudget: 24576 });
    // As raw JSON: the Anthropic SDK insists on streaming for a bound this large.
    const res = await pairs.router.fetch("/v1/messages", { method: "POST", headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" }, body: JSON.stringify({ model: "rt-gemini", max_tokens: 64000, messages: hi, thinking: { type: "enabled", budget_tokens: 31999 } }) });
    expect(res.status).toBe(200);
    expect(sentTo("gemini").generationConfig.thinkingConfig.thinkingBudget).toBe(24576);
  });

  test("smaller budgets and the dynamic -1 are carried as they are", async () => {
    answerAs("gemini");
    await anthropic().messages.create({ model: "rt-gemini", max_tokens: 20000, messages: hi, thinking: { type: "enabled", budget_tokens: 4000 } });
    expect(sentTo("gemini").generationConfig.thinkingConfig.thinkingBudget).toBe(4000);
    await anthropic().messages.create({ model: "rt-gemini", max_tokens: 20000, messages: hi, thinking: { type: "adaptive" } as any });
    expect(sentTo("gemini").generationConfig.thinkingConfig.thinkingBudget).toBe(-1);
  });
});

describe("an image typed image/jpg towards Anthropic", () => {
  /**
   * `image/jpg` is not a registered media type, but OpenAI and Gemini read data URLs and
   * blobs labelled with it, and clients often write it. Anthropic takes only
   * `image/jpeg`; the router now names the same JPEG the way Anthropic reads it rather
   * than refusing it.
   */
  test("an OpenAI client's data:image/jpg URL reaches Anthropic as image/jpeg", async () => {
    answerAs("anthropic");
    await chat().chat.completions.create({ model: "rt-anthropic", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:image/jpg;base64,/9j/4AAQ" } }] }] });
    expect(sentTo("anthropic").messages[0].content[0]).toEqual({ type: "image", source: { type: "base64", media_type: "image/jpeg", data: "/9j/4AAQ" } });
  });
});

describe("penalties towards a Gemini upstream", () => {
  /**
   * Current Gemini models (2.5 and later) answer 400 "Penalty is not enabled for
   * models/gemini-2.5-flash" to `presencePenalty` and `frequencyPenalty`, which OpenAI
   * clients often send (chat front ends set them by default). They were sent on, so such
   * calls failed at the upstream. They are sampling hints, and the Anthropic and
   * Responses writers already drop them as such; the Gemini writer now does too.
   */
  test("an OpenAI client's penalties are not sent to Gemini; its other sampling settings are", async () => {
    answerAs("gemini");
    await chat().chat.completions.create({ model: "rt-gemini", messages: hi, presence_penalty: 0.5, frequency_penalty: 0.3, temperature: 0.2, seed: 7 });
    const config = sentTo("gemini").generationConfig;
    expect(config).toMatchObject({ temperature: 0.2, seed: 7 });
    expect(config.presencePenalty).toBeUndefined();
    expect(config.frequencyPenalty).toBeUndefined();
  });
});

describe("schema constraints Anthropic's structured outputs do not take", () => {
  /**
   * Anthropic's structured outputs (and strict tools) refuse value constraints: 400
   * "output_config.format.schema: For 'integer' type, property 'minimum' is not
   * supported", and likewise `maximum`, `multipleOf`, `minLength`, `maxLength`, array
   * bounds other than `minItems` 0 or 1, and string formats it does not know. OpenAI
   * strict schemas carry them often (a score from 1 to 10, a bounded name), and they went
   * to Anthropic as they were. As Anthropic's own SDKs do, such constraints now move into
   * the schema's description, where the model reads them, and the rest is enforced.
   */
  test("an OpenAI client's bounded score and name reach Anthropic with their bounds described", async () => {
    answerAs("anthropic");
    const schema = {
      type: "object",
      properties: {
        score: { type: "integer", description: "How good", minimum: 1, maximum: 10 },
        name: { type: "string", maxLength: 20, format: "email" },
        tags: { type: "array", items: { type: "string" }, minItems: 2 },
        any: { type: "array", items: { type: "string" }, minItems: 1 },
      },
      required: ["score", "name", "tags", "any"],
      additionalProperties: false,
    };
    await chat().chat.completions.create({ model: "rt-anthropic", messages: hi, response_format: { type: "json_schema", json_schema: { name: "review", schema, strict: true } } });
    const sent = sentTo("anthropic").output_config.format.schema;
    expect(sent.properties.score).toEqual({ type: "integer", description: 'How good\n\n{minimum: 1, maximum: 10}' });
    expect(sent.properties.name).toEqual({ type: "string", format: "email", description: "{maxLength: 20}" });
    expect(sent.properties.tags).toEqual({ type: "array", items: { type: "string" }, description: "{minItems: 2}" });
    expect(sent.properties.any).toEqual({ type: "array", items: { type: "string" }, minItems: 1 });
  });

  test("an OpenAI client's strict tool gets the same treatment; a loose tool keeps its schema", async () => {
    answerAs("anthropic");
    const parameters = { type: "object", properties: { n: { type: "number", exclusiveMinimum: 0 } }, required: ["n"], additionalProperties: false };
    await chat().chat.completions.create({ model: "rt-anthropic", messages: hi, tools: [{ type: "function", function: { name: "strict_f", parameters, strict: true } }, { type: "function", function: { name: "loose_f", parameters } }] });
    const [strictTool, looseTool] = sentTo("anthropic").tools;
    expect(strictTool.input_schema.properties.n).toEqual({ type: "number", description: "{exclusiveMinimum: 0}" });
    expect(looseTool.input_schema).toEqual(parameters);
  });
});

describe("empty content towards Anthropic and Gemini", () => {
  /**
   * OpenAI takes a user message whose content is "" (and a conversation of a system
   * message alone). Anthropic refuses a request with no message left (400 "messages: at
   * least one message is required"; the router leaves empty text out, as Anthropic refuses
   * empty text blocks too), and Gemini (Vertex) refuses an empty text part (400 "Unable to
   * submit request because it has an empty text parameter"). Empty text is now left out
   * towards Gemini too, and a conversation with nothing left to send is the router's 400,
   * naming the client's messages, before anything is sent.
   */
  test("an empty user text among others is left out towards Gemini", async () => {
    answerAs("gemini");
    await chat().chat.completions.create({ model: "rt-gemini", messages: [{ role: "user", content: "Name a colour." }, { role: "user", content: "" }] });
    expect(sentTo("gemini").contents).toEqual([{ role: "user", parts: [{ text: "Name a colour." }] }]);
  });

  test("a conversation of an empty user text is refused naming messages, towards Anthropic and Gemini", async () => {
    for (const format of ["anthropic", "gemini"] as const) {
      answerAs(format);
      const error = (await chat().chat.completions.create({ model: `rt-${format}`, messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "" }] }).catch((e: unknown) => e)) as any;
      expect(error.status).toBe(400);
      expect(error.error.param).toBe("messages");
      expect(up(format).requests).toHaveLength(0);
    }
  });
});

describe("a tool choice without tools towards a Responses upstream", () => {
  /**
   * A tool choice means nothing without tools, and OpenAI refuses `required` without them
   * ("tool_choice 'required' must be specified with 'tools'"). The Chat, Anthropic and
   * Gemini writers send a tool choice only with tools; the Responses writer sent it
   * anyway, so a client that states its choice on every call (a Gemini client's
   * `toolConfig`, an OpenAI client's `tool_choice` with an empty tool list) failed there.
   */
  test("an OpenAI client's required choice with no tools is not sent; with tools it is", async () => {
    answerAs("responses");
    await chat().chat.completions.create({ model: "rt-responses", messages: hi, tools: [], tool_choice: "required" });
    expect(sentTo("responses").tool_choice).toBeUndefined();
    const tools = [{ type: "function" as const, function: { name: "f", parameters: { type: "object", properties: {} } } }];
    await chat().chat.completions.create({ model: "rt-responses", messages: hi, tools, tool_choice: "required" });
    expect(sentTo("responses").tool_choice).toBe("required");
  });
});
