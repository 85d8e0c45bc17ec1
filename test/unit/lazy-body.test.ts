import { describe, expect, test } from "bun:test";
import { conversationIsPlain, stringifyBody, withMembers } from "../../src/formats/held-json.ts";
import { hasControlByte, LAZY_BODY_BYTES, parseCallBody } from "../../src/formats/lazy-body.ts";
import { inputIsUnsized } from "../../src/metering/unsized-input.ts";

const bytesOf = (text: string) => new TextEncoder().encode(text);

/** Ordinary conversation turns (long plain messages, a quote and a line break each), enough of them to pass LAZY_BODY_BYTES. */
function turns(count = 80): Array<{ role: string; content: string }> {
  return Array.from({ length: count }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `Turn ${i}: the deployment log says "ok"\n${"and the retry policy doubled the backoff between the attempts. ".repeat(8)}` }));
}

/** Whether reading the body lazily left `field` as text (nothing read it yet). */
const heldAsText = (json: object, field: string) => typeof Object.getOwnPropertyDescriptor(json, field)?.get === "function";

describe("a large call body read with its conversation left as text", () => {
  test("every member reads as JSON.parse reads it, and only once something reads the conversation is it parsed", () => {
    const body = { model: "m", messages: turns(), max_tokens: 100, stream: false, metadata: { a: [1, 2] } };
    const text = JSON.stringify(body);
    expect(text.length).toBeGreaterThan(LAZY_BODY_BYTES);
    const json = parseCallBody(bytesOf(text));
    expect(heldAsText(json, "messages")).toBe(true);
    expect(json.model).toBe("m");
    expect(json.max_tokens).toBe(100);
    expect(Object.keys(json)).toEqual(Object.keys(body));
    expect(json.messages).toEqual(body.messages);
    expect(heldAsText(json, "messages")).toBe(false);
    expect(json).toEqual(body);
  });

  test("text dense with strings and escapes (an agent's tool calls) is parsed whole: JSON.parse reads it faster", () => {
    const toolCalls = {
      model: "m",
      messages: Array.from({ length: 60 }, (_, i) => ({ role: "user", content: [{ type: "tool_result", tool_use_id: `t${i}`, content: '     1\timport x from "y";\n     2\tconst a = 1;\n'.repeat(12) }] })),
    };
    const text = JSON.stringify(toolCalls);
    expect(text.length).toBeGreaterThan(LAZY_BODY_BYTES);
    const json = parseCallBody(bytesOf(text));
    expect(heldAsText(json, "messages")).toBe(false);
    expect(json).toEqual(toolCalls);
  });

  test("text beyond ASCII is held too; a control character in it is found in its bytes: a 400", () => {
    const accented = { model: "m", messages: turns().map((t) => ({ ...t, content: `${t.content} déjà vu, 日本語, ✓ 🎉` })) };
    const text = JSON.stringify(accented);
    const json = parseCallBody(bytesOf(text));
    expect(heldAsText(json, "messages")).toBe(true);
    expect(json).toEqual(accented);
    for (const control of ["\u0001", "\t", "\u001f"]) {
      let status = 0;
      try {
        parseCallBody(bytesOf(text.replace("déjà", `dé${control}jà`)));
      } catch (error) {
        status = (error as { status: number }).status;
      }
      expect(status).toBe(400);
    }
  });

  test("a control byte is found at every offset and alignment, and only a control byte", () => {
    const mismatches: string[] = [];
    for (let length = 0; length < 12; length++) {
      for (let offset = 0; offset < 4; offset++) {
        for (let at = -1; at < length; at++) {
          for (const value of [0x00, 0x09, 0x0a, 0x1f, 0x20, 0x7f, 0x80, 0x9f, 0xc3, 0xff]) {
            const bytes = new Uint8Array(length + offset + 4).fill(0x41).subarray(offset, offset + length);
            bytes.fill(0xe6);
            if (at >= 0) bytes[at] = value;
            if (hasControlByte(bytes) !== (at >= 0 && value < 0x20)) mismatches.push(`${length}/${offset}/${at}/${value}`);
          }
        }
      }
    }
    expect(mismatches).toEqual([]);
  });

  test("Responses `input` and Gemini `contents` are held too; a small body or a small conversation is parsed whole", () => {
    const responses = parseCallBody(bytesOf(JSON.stringify({ model: "m", input: turns().map((t) => ({ type: "message", ...t })) })));
    expect(heldAsText(responses, "input")).toBe(true);
    const gemini = parseCallBody(bytesOf(JSON.stringify({ contents: turns().map((t) => ({ role: t.role, parts: [{ text: t.content }] })) })));
    expect(heldAsText(gemini, "contents")).toBe(true);
    expect(heldAsText(parseCallBody(bytesOf(JSON.stringify({ model: "m", messages: turns(3) }))), "messages")).toBe(false);
    // Large only for its system prompt: the messages stay small and are parsed with the rest.
    const longSystem = parseCallBody(bytesOf(JSON.stringify({ model: "m", system: "x".repeat(LAZY_BODY_BYTES), messages: turns(2) })));
    expect(heldAsText(longSystem, "messages")).toBe(false);
  });

  test("what JSON.parse would decide differently is left to it: a repeated conversation, an escaped top-level key", () => {
    const messages = JSON.stringify(turns());
    const twice = `{"model":"m","messages":${messages},"messages":[{"role":"user","content":"last wins"}]}`;
    expect(parseCallBody(bytesOf(twice)).messages).toEqual([{ role: "user", content: "last wins" }]);
    const escaped = `{"model":"m","messages":${messages},"m\\u0065ssages":[{"role":"user","content":"escaped wins"}]}`;
    expect(parseCallBody(bytesOf(escaped)).messages).toEqual([{ role: "user", content: "escaped wins" }]);
    const spaced = `  {\n  "model" : "m" ,\n  "messages" :\n ${JSON.stringify(turns(), null, 2)}\n}\n`;
    expect(parseCallBody(bytesOf(spaced))).toEqual(JSON.parse(spaced));
  });

  test("a large body that is not a JSON object is a 400, as a small one is", () => {
    const messages = JSON.stringify(turns());
    for (const text of [`{"model":"m","messages":${messages.slice(0, -1)}}`, `{"model":"m","messages":${messages}`, `[${messages}]`, `{"model":"m","messages":${messages}} x`, `{"model":"m","messages":${messages.replace('"user"', '"us\u0001er"')}}`]) {
      expect(text.length).toBeGreaterThan(LAZY_BODY_BYTES);
      let status = 0;
      try {
        parseCallBody(bytesOf(text));
      } catch (error) {
        status = (error as { status: number }).status;
      }
      expect(status).toBe(400);
    }
  });

  test("the unsized check answers for a held conversation as for a parsed one, parts at any depth and spelt any way", () => {
    const parts: unknown[] = [
      { type: "text", text: "plain" },
      { type: "image_url", image_url: { url: "https://example.com/a.png" } },
      { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
      { type: "image", source: { type: "url", url: "https://example.com/a.png" } },
      { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } },
      { type: "document", source: { type: "base64", media_type: "application/pdf", data: "AAAA" } },
      { type: "file", file: { file_id: "file-1" } },
      { type: "input_file", file_id: "file-1" },
      { type: "tool_result", tool_use_id: "t", content: [{ type: "image", source: { type: "file", file_id: "f" } }] },
      { type: "tool_result", tool_use_id: "t", content: [{ type: "text", text: "ok" }] },
      { type: "tool_use", id: "t", name: "read", input: { source: "notes.txt", type: "file" } },
      { type: "server_tool_use", id: "s", name: "web_search", input: {} },
      { type: "text", text: "ok", cache_control: { type: "ephemeral" } },
      { type: 7, text: "a number for a type" },
    ];
    // As sent, with the `type` key escaped, with the first letter of the type's value escaped, with a reference key's escaped.
    const spellings = (part: unknown) => {
      const text = JSON.stringify(part);
      return [
        text,
        text.replace('"type"', '"typ\\u0065"'),
        text.replace(/"type":"(.)/, (_, c: string) => `"type":"\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`),
        text.replace(/"(file_id|image_url|source)":/, (_, key: string) => `"\\u${key.charCodeAt(0).toString(16).padStart(4, "0")}${key.slice(1)}":`),
      ];
    };
    for (const part of parts) {
      for (const spelt of spellings(part)) {
        for (const where of ["first", "last"]) {
          const filler = JSON.stringify(turns()).slice(1, -1);
          const message = `{"role":"user","content":[${spelt}]}`;
          const text = `{"model":"m","messages":[${where === "first" ? `${message},${filler}` : `${filler},${message}`}]}`;
          const parsed = JSON.parse(text);
          const held = parseCallBody(bytesOf(text));
          expect(heldAsText(held, "messages")).toBe(true);
          expect([spelt, where, inputIsUnsized(held)]).toEqual([spelt, where, inputIsUnsized(parsed)]);
        }
      }
    }
  });

  test("the unsized check reads a held conversation only when its text names a part field, and a held conversation replaced is checked as replaced", () => {
    const plain = parseCallBody(bytesOf(JSON.stringify({ model: "m", messages: turns() })));
    expect(conversationIsPlain(plain, "messages")).toBe(true);
    expect(inputIsUnsized(plain)).toBe(false);
    expect(heldAsText(plain, "messages")).toBe(true);
    // A `type` key is everywhere in agents' conversations: only an unsized type needs a look.
    const typed = parseCallBody(bytesOf(JSON.stringify({ model: "m", messages: turns().map((t) => ({ role: t.role, content: [{ type: "text", text: t.content }] })) })));
    expect(conversationIsPlain(typed, "messages")).toBe(true);
    const replaced = parseCallBody(bytesOf(JSON.stringify({ model: "m", messages: turns() })));
    replaced.messages = [{ role: "user", content: [{ type: "image_url", image_url: { url: "https://example.com/a.png" } }] }];
    expect(conversationIsPlain(replaced, "messages")).toBe(false);
    expect(inputIsUnsized(replaced)).toBe(true);
  });

  test("a copy with members set keeps the conversation as text, and the body is written back as it came", () => {
    const body = { model: "m", messages: turns(), max_tokens: 100 };
    const text = JSON.stringify(body);
    const json = parseCallBody(bytesOf(text));
    expect(stringifyBody(json)).toBe(text);
    const mapped = withMembers(json, { model: "real-model", stream_options: { include_usage: true } });
    expect(heldAsText(mapped, "messages")).toBe(true);
    expect(heldAsText(json, "messages")).toBe(true);
    expect(Object.keys(mapped)).toEqual(Object.keys({ ...body, model: "x", stream_options: 1 }));
    expect(stringifyBody(mapped)).toBe(JSON.stringify({ ...body, model: "real-model", stream_options: { include_usage: true } }));
    // Written as the client spaced it: the same JSON, not the same characters.
    const spaced = `{"model": "m", "messages": ${JSON.stringify(turns(), null, 1)}}`;
    const written = stringifyBody(withMembers(parseCallBody(bytesOf(spaced)), { model: "real-model" }));
    expect(written).toContain('"role": "user"');
    expect(JSON.parse(written)).toEqual({ ...JSON.parse(spaced), model: "real-model" });
    // Once read, the member is written from its value (it may have changed).
    const edited = parseCallBody(bytesOf(text));
    (edited.messages as Array<{ content: string }>)[0]!.content = "edited";
    expect(JSON.parse(stringifyBody(edited)).messages[0].content).toBe("edited");
    // Bodies with nothing held are serialized as JSON.stringify does.
    expect(stringifyBody({ a: 1, b: [2] })).toBe('{"a":1,"b":[2]}');
    expect(withMembers({ a: 1 }, { b: 2 })).toEqual({ a: 1, b: 2 });
  });
});
