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
