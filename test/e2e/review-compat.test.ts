import { describe, expect, test } from "bun:test";
import { anthropicText, chatText, chunk, compatRouter, completion, cost, data, events, pieces, tokens } from "../helpers/compat-calls.ts";
import { json, sse } from "../helpers/mock-upstream.ts";

/**
 * OpenAI- and Anthropic-compatible servers that self-hosters put behind the router,
 * each answering with the legal but unusual shapes its documentation shows: the client
 * gets its answer in its own format and the charge is what the upstream reported
 * (review-compat-wire.test.ts: compressed answers and wrong lengths).
 */

const compat = compatRouter("cp");
const { up, call, chat, messages } = compat;

describe("DeepSeek: cache hits reported as prompt_cache_hit_tokens", () => {
  const usage = { prompt_tokens: 1000, completion_tokens: 100, total_tokens: 1100, prompt_cache_hit_tokens: 800, prompt_cache_miss_tokens: 200, completion_tokens_details: { reasoning_tokens: 40 } };
  const expected = { prompt: 1000, completion: 100, cache_read: 800, cache_write: 0, reasoning: 40, source: "upstream", cost: cost({ input: 200, cached: 800, output: 100 }) };
  test("non-streaming", async () => {
    up("openai").route("POST", /.*/, () => json(completion(usage)));
    const r = await chat("cp-openai", false);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text).usage).toEqual(usage);
    expect(tokens(r.row)).toEqual(expected);
    await compat.expectLogged(r);
  });
  test("streaming, usage on the last chunk", async () => {
    up("openai").route("POST", /.*/, () => sse([chunk({ role: "assistant", content: "he" }), chunk({ content: "llo" }, "stop"), { ...chunk({}), choices: [], usage }], { done: true }));
    const r = await chat("cp-openai", true);
    expect(chatText(r.text)).toBe("hello");
    expect(tokens(r.row)).toEqual(expected);
  });
  test("translated: an Anthropic client on a DeepSeek chat upstream", async () => {
    up("openai").route("POST", /.*/, () => json(completion(usage)));
    const r = await messages("cp-openai", false);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text).usage).toMatchObject({ input_tokens: 200, cache_read_input_tokens: 800, output_tokens: 100 });
    expect(tokens(r.row)).toEqual(expected);
  });
});

describe("LiteLLM: cache writes of an Anthropic model reported as cache_creation_tokens / cache_creation_input_tokens", () => {
  // A LiteLLM proxy's usage for a Claude call (its issue 11364): prompt_tokens holds the cache reads and writes.
  const usage = {
    total_tokens: 103925,
    prompt_tokens: 98805,
    completion_tokens: 5120,
    prompt_tokens_details: { text_tokens: null, audio_tokens: null, image_tokens: null, cached_tokens: 66360, cache_creation_tokens: 32435 },
    cache_read_input_tokens: 66360,
    completion_tokens_details: { text_tokens: null, audio_tokens: null, image_tokens: null, reasoning_tokens: 1710, accepted_prediction_tokens: null, rejected_prediction_tokens: null },
    cache_creation_input_tokens: 32435,
  };
  const expected = { prompt: 98805, completion: 5120, cache_read: 66360, cache_write: 32435, reasoning: 1710, source: "upstream", cost: cost({ input: 10, cached: 66360, write: 32435, output: 5120 }) };
  test("non-streaming and streaming, same format and translated", async () => {
    up("openai").route("POST", /.*/, (request) => (request.json.stream ? sse([chunk({ role: "assistant", content: "ok" }, "stop"), { ...chunk({}), choices: [], usage }], { done: true }) : json(completion(usage, "ok"))));
    for (const r of [await chat("cp-openai", false), await chat("cp-openai", true), await messages("cp-openai", false), await messages("cp-openai", true)]) expect(tokens(r.row)).toEqual(expected);
    const translated = await messages("cp-openai", false);
    expect(JSON.parse(translated.text).usage).toMatchObject({ input_tokens: 10, cache_read_input_tokens: 66360, cache_creation_input_tokens: 32435, output_tokens: 5120 });
  });
  test("only the top-level cache_creation_input_tokens", async () => {
    const { prompt_tokens_details, ...rest } = usage;
    up("openai").route("POST", /.*/, () => json(completion({ ...rest, prompt_tokens_details: { cached_tokens: 66360 } }, "ok")));
    expect(tokens((await chat("cp-openai", false)).row)).toEqual(expected);
  });
});

describe("Groq: streamed usage in x_groq.usage on the last chunk", () => {
  const groqUsage = { queue_time: 0.02, prompt_tokens: 50, prompt_time: 0.004, completion_tokens: 7, completion_time: 0.01, total_tokens: 57, total_time: 0.014 };
  const groqStream = () =>
    sse([chunk({ role: "assistant", content: "" }, null, { x_groq: { id: "req_01" } }), chunk({ content: "hel" }), chunk({ content: "lo" }), chunk({}, "stop", { x_groq: { id: "req_01", usage: groqUsage } })], { done: true });
  const expected = { prompt: 50, completion: 7, cache_read: 0, cache_write: 0, reasoning: 0, source: "upstream", cost: cost({ input: 50, output: 7 }) };
  test("same format: relayed as sent and charged as reported", async () => {
    up("openai").route("POST", /.*/, groqStream);
    const r = await chat("cp-openai", true);
    expect(chatText(r.text)).toBe("hello");
    expect(r.text).toContain('"x_groq"');
    expect(tokens(r.row)).toEqual(expected);
  });
  test("translated: an Anthropic client gets Groq's counts", async () => {
    up("openai").route("POST", /.*/, groqStream);
    const r = await messages("cp-openai", true);
    expect(anthropicText(r.text)).toBe("hello");
    const delta = events(r.text).find((e) => e.type === "message_delta");
    expect(delta.usage).toMatchObject({ output_tokens: 7 });
    expect(tokens(r.row)).toEqual(expected);
    await compat.expectLogged(r);
  });
});

describe("Moonshot: streamed usage inside choices[0].usage on the finishing chunk", () => {
  const usage = { prompt_tokens: 30, completion_tokens: 9, total_tokens: 39 };
  const finish = () => ({ ...chunk({}, "stop"), choices: [{ index: 0, delta: {}, finish_reason: "stop", usage }] });
  const expected = { prompt: 30, completion: 9, cache_read: 0, cache_write: 0, reasoning: 0, source: "upstream", cost: cost({ input: 30, output: 9 }) };
  test("there only: charged as reported, same format and translated", async () => {
    up("openai").route("POST", /.*/, () => sse([chunk({ role: "assistant", content: "hel" }), chunk({ content: "lo" }), finish()], { done: true }));
    const r = await chat("cp-openai", true);
    expect(chatText(r.text)).toBe("hello");
    expect(tokens(r.row)).toEqual(expected);
    const translated = await messages("cp-openai", true);
    expect(anthropicText(translated.text)).toBe("hello");
    expect(tokens(translated.row)).toEqual(expected);
  });
  test("there and again on a trailing usage chunk: counted once", async () => {
    up("openai").route("POST", /.*/, () => sse([chunk({ role: "assistant", content: "hello" }), finish(), { ...chunk({}), choices: [], usage }], { done: true }));
    const r = await chat("cp-openai", true);
    expect(tokens(r.row)).toEqual(expected);
    const translated = await messages("cp-openai", true);
    expect(tokens(translated.row)).toEqual(expected);
  });
});

describe("xAI: reasoning_tokens counted beside completion_tokens (total_tokens = prompt + completion + reasoning)", () => {
  // grok-3-mini's figures as xAI reports them: 12 + 1 + 386 = 399.
  const usage = { prompt_tokens: 12, completion_tokens: 1, total_tokens: 399, prompt_tokens_details: { text_tokens: 12, audio_tokens: 0, image_tokens: 0, cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 386, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 }, num_sources_used: 0 };
  const expected = { prompt: 12, completion: 387, cache_read: 0, cache_write: 0, reasoning: 386, source: "upstream", cost: cost({ input: 12, output: 387 }) };
  test("non-streaming, same format and translated", async () => {
    up("openai").route("POST", /.*/, () => json(completion(usage, "4")));
    const r = await chat("cp-openai", false);
    expect(JSON.parse(r.text).usage).toEqual(usage);
    expect(tokens(r.row)).toEqual(expected);
    const translated = await messages("cp-openai", false);
    expect(JSON.parse(translated.text).usage).toMatchObject({ input_tokens: 12, output_tokens: 387 });
    expect(tokens(translated.row)).toEqual(expected);
  });
  test("streaming", async () => {
    up("openai").route("POST", /.*/, () => sse([chunk({ role: "assistant", content: "4" }, "stop"), { ...chunk({}), choices: [], usage }], { done: true }));
    const r = await chat("cp-openai", true);
    expect(chatText(r.text)).toBe("4");
    expect(tokens(r.row)).toEqual(expected);
  });
  test("OpenAI's own shape, reasoning inside completion_tokens, is not counted twice", async () => {
    const openai = { prompt_tokens: 12, completion_tokens: 387, total_tokens: 399, completion_tokens_details: { reasoning_tokens: 386 } };
    up("openai").route("POST", /.*/, () => json(completion(openai, "4")));
    const r = await chat("cp-openai", false);
    expect(tokens(r.row)).toEqual(expected);
  });
});

describe("usage on more than one chunk", () => {
  test("vLLM continuous_usage_stats: cumulative usage on every chunk is not summed", async () => {
    const u = (completion: number) => ({ prompt_tokens: 40, completion_tokens: completion, total_tokens: 40 + completion });
    up("openai").route("POST", /.*/, () =>
      sse([chunk({ role: "assistant", content: "" }, null, { usage: u(0) }), chunk({ content: "hel" }, null, { usage: u(1) }), chunk({ content: "lo" }, null, { usage: u(2) }), chunk({}, "stop", { usage: u(3) }), { ...chunk({}), choices: [], usage: u(3) }], { done: true }),
    );
    const r = await call("/v1/chat/completions", { model: "cp-openai", stream: true, stream_options: { include_usage: true, continuous_usage_stats: true }, messages: [{ role: "user", content: "hi" }] });
    expect(chatText(r.text)).toBe("hello");
    expect(tokens(r.row)).toMatchObject({ prompt: 40, completion: 3, source: "upstream", cost: cost({ input: 40, output: 3 }) });
  });
  test("Mistral and Together: usage on the finishing chunk, which also carries content; the client did not ask for usage", async () => {
    const usage = { prompt_tokens: 12, total_tokens: 20, completion_tokens: 8 };
    up("openai").route("POST", /.*/, () => sse([chunk({ role: "assistant", content: "hel" }), chunk({ content: "lo!" }, "stop", { usage })], { done: true }));
    const r = await chat("cp-openai", true);
    expect(chatText(r.text)).toBe("hello!");
    expect(tokens(r.row)).toMatchObject({ prompt: 12, completion: 8, source: "upstream" });
    const translated = await messages("cp-openai", true);
    expect(anthropicText(translated.text)).toBe("hello!");
    expect(tokens(translated.row)).toMatchObject({ prompt: 12, completion: 8, source: "upstream" });
  });
  test("a server that ignores stream_options never sends usage: a capped estimate, marked estimated, never zero", async () => {
    up("openai").route("POST", /.*/, () => sse([chunk({ role: "assistant", content: "hello there" }), chunk({}, "stop")], { done: true }));
    const r = await chat("cp-openai", true);
    expect(chatText(r.text)).toBe("hello there");
    expect(r.row.source).toBe("estimated");
    expect(r.row.completion_tokens).toBeGreaterThan(0);
    expect(r.row.cost_nanos).toBeGreaterThan(0);
    expect(r.row.cost_nanos).toBeLessThanOrEqual(cost({ input: 100000, output: 4000 }));
  });
});

describe("SSE framing", () => {
  const usage = { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13, cost: 0.0000265, is_byok: false, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } };
  // "héllo wörld ✓": the é, ö and ✓ are cut between reads.
  const body = () => {
    const first = new TextEncoder().encode(data(chunk({ role: "assistant", content: "héllo wörld ✓" }), "\r\n"));
    const at = first.indexOf(0xc3) + 1;
    const check = first.indexOf(0xe2) + 2;
    return [": OPENROUTER PROCESSING\r\n\r\n", first.slice(0, at), first.slice(at, check), first.slice(check), ": OPENROUTER PROCESSING\r\n\r\n", data(chunk({}, "stop"), "\r\n"), data({ ...chunk({}), choices: [], usage }, "\r\n"), "data: [DONE]\r\n\r\n"];
  };
  test("OpenRouter: CRLF, processing comments, a character cut between reads, usage with cost and is_byok", async () => {
    up("openai").route("POST", /.*/, () => pieces(body()));
    const r = await chat("cp-openai", true);
    expect(chatText(r.text)).toBe("héllo wörld ✓");
    // The usage chunk the router asked for on the client's behalf is not shown to it.
    expect(r.text).not.toContain('"usage"');
    expect(tokens(r.row)).toEqual({ prompt: 9, completion: 4, cache_read: 0, cache_write: 0, reasoning: 0, source: "upstream", cost: cost({ input: 9, output: 4 }) });
    const translated = await messages("cp-openai", true);
    expect(anthropicText(translated.text)).toBe("héllo wörld ✓");
    expect(tokens(translated.row)).toMatchObject({ prompt: 9, completion: 4, source: "upstream" });
  });
  test("no [DONE]: the stream ends when the connection closes cleanly after the usage chunk", async () => {
    up("openai").route("POST", /.*/, () => pieces([data(chunk({ role: "assistant", content: "fine" }, "stop")), data({ ...chunk({}), choices: [], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } })]));
    const r = await chat("cp-openai", true);
    expect(r.status).toBe(200);
    expect(chatText(r.text)).toBe("fine");
    expect(r.row).toMatchObject({ status: 200, prompt_tokens: 3, completion_tokens: 1, source: "upstream" });
    const translated = await messages("cp-openai", true);
    expect(anthropicText(translated.text)).toBe("fine");
    expect(events(translated.text).at(-1)).toMatchObject({ type: "message_stop" });
    expect(translated.row).toMatchObject({ status: 200, prompt_tokens: 3, completion_tokens: 1, source: "upstream" });
  });
  test("a server that ignores stream:true and answers JSON: the answer in the client's family, charged as reported", async () => {
    up("openai").route("POST", /.*/, () => json(completion({ prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 }, "plain")));
    const r = await chat("cp-openai", true);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text).choices[0].message.content).toBe("plain");
    expect(tokens(r.row)).toMatchObject({ prompt: 5, completion: 2, source: "upstream", cost: cost({ input: 5, output: 2 }) });
    const translated = await messages("cp-openai", true);
    expect(translated.status).toBe(200);
    expect(JSON.parse(translated.text)).toMatchObject({ type: "message", content: [{ type: "text", text: "plain" }], usage: { input_tokens: 5, output_tokens: 2 } });
    expect(tokens(translated.row)).toMatchObject({ prompt: 5, completion: 2, source: "upstream", cost: cost({ input: 5, output: 2 }) });
  });
});

describe("Anthropic-compatible streams", () => {
  const start = (usage: Record<string, unknown>) => ["message_start", { type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", model: "m", content: [], stop_reason: null, stop_sequence: null, usage } }];
  const stream = (startUsage: Record<string, unknown>, deltaUsage: Record<string, unknown>) => () =>
    sse([
      start(startUsage),
      ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
      ["ping", { type: "ping" }],
      ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "hel" } }],
      ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "lo" } }],
      ["content_block_stop", { type: "content_block_stop", index: 0 }],
      ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: deltaUsage }],
      ["message_stop", { type: "message_stop" }],
    ]);
  // Anthropic's own: cache counts on message_start, and message_delta restating them with the final output count.
  const cached = { input_tokens: 20, cache_creation_input_tokens: 300, cache_read_input_tokens: 1000, output_tokens: 1 };
  const expected = { prompt: 1320, completion: 15, cache_read: 1000, cache_write: 300, reasoning: 0, source: "upstream", cost: cost({ input: 20, cached: 1000, write: 300, output: 15 }) };
  test("ping events, cache counts on message_start, message_delta repeating input_tokens: counted once", async () => {
    up("anthropic").route("POST", /.*/, stream(cached, { ...cached, output_tokens: 15 }));
    const r = await messages("cp-anthropic", true);
    expect(anthropicText(r.text)).toBe("hello");
    expect(events(r.text).filter((e) => e.type === "ping")).toHaveLength(1);
    expect(tokens(r.row)).toEqual(expected);
    const translated = await chat("cp-anthropic", true);
    expect(chatText(translated.text)).toBe("hello");
    expect(tokens(translated.row)).toEqual(expected);
  });
  test("message_delta with the output count only (DeepSeek's and Moonshot's endpoints): the input side kept from message_start", async () => {
    up("anthropic").route("POST", /.*/, stream(cached, { output_tokens: 15 }));
    const r = await messages("cp-anthropic", true);
    expect(tokens(r.row)).toEqual(expected);
    const translated = await call("/v1/chat/completions", { model: "cp-anthropic", stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "hi" }] });
    expect(events(translated.text).find((e) => e !== "[DONE]" && e.usage)?.usage).toMatchObject({ prompt_tokens: 1320, completion_tokens: 15, prompt_tokens_details: { cached_tokens: 1000 } });
    expect(tokens(translated.row)).toEqual(expected);
  });
  test("message_start with zero placeholders and every count on message_delta", async () => {
    up("anthropic").route("POST", /.*/, stream({ input_tokens: 0, output_tokens: 0 }, { ...cached, output_tokens: 15 }));
    const r = await messages("cp-anthropic", true);
    expect(tokens(r.row)).toEqual(expected);
  });
});

describe("a failure the upstream reports inside its stream", () => {
  const piece = "x".repeat(199) + " ";
  test("Anthropic's overloaded_error after 4000 bytes of text: charged for what was delivered, not message_start's placeholder; the row says 502", async () => {
    up("anthropic").route("POST", /.*/, () =>
      sse([
        ["message_start", { type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", model: "m", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 12, output_tokens: 1 } } }],
        ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
        ...Array.from({ length: 20 }, (): [string, unknown] => ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: piece } }]),
        ["error", { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }],
      ]),
    );
    for (const r of [await messages("cp-anthropic", true), await chat("cp-anthropic", true)]) {
      expect(r.status).toBe(200);
      expect(r.text.split(piece).length - 1).toBe(20);
      expect(r.text).toContain("Overloaded");
      expect(r.row).toMatchObject({ status: 502, prompt_tokens: 12, source: "estimated" });
      expect(r.row.completion_tokens).toBeGreaterThanOrEqual(900);
      await compat.expectLogged(r);
    }
  });
  test("OpenRouter's error chunk (finish_reason error) after some text: the row says 502, charged an estimate of what was delivered", async () => {
    up("openai").route("POST", /.*/, () =>
      sse([chunk({ role: "assistant", content: piece.repeat(5) }), { id: "cmpl-abc", object: "chat.completion.chunk", created: 1, model: "m", provider: "openai", error: { code: "server_error", message: "Provider disconnected unexpectedly" }, choices: [{ index: 0, delta: { content: "" }, finish_reason: "error" }] }], { done: true }),
    );
    for (const r of [await chat("cp-openai", true), await messages("cp-openai", true)]) {
      expect(r.status).toBe(200);
      expect(r.text).toContain("Provider disconnected unexpectedly");
      expect(r.row).toMatchObject({ status: 502, source: "estimated" });
      expect(r.row.completion_tokens).toBeGreaterThanOrEqual(200);
    }
  });
});
