import { describe, expect, test } from "bun:test";
import { OPENAI_ENDPOINTS } from "../../src/formats/openai/endpoints.ts";
import { bodyCall } from "../../src/formats/read-call.ts";
import { namedFileIds } from "../../src/gateway/named-files.ts";

const source = { url: "https://router.test/v1/responses", headers: new Headers() };
const call = (body: string) => bodyCall(OPENAI_ENDPOINTS["/v1/responses"]!, new TextEncoder().encode(body), source);
/** A long conversation of plain text (held as text by the lazy reader), with `extra` as its last message's content. */
const long = (extra: unknown) =>
  JSON.stringify({
    model: "m",
    input: [...Array.from({ length: 60 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: "plain words ".repeat(60) })), { role: "user", content: extra }],
  });

describe("files a model call's body names", () => {
  test("file_id and file_ids at any depth, each once; none in most bodies", () => {
    expect(namedFileIds(call(JSON.stringify({ model: "m", input: "hi" })))).toEqual([]);
    const parts = [{ type: "input_file", file_id: "file-a" }, { type: "input_text", text: "and" }, { type: "input_file", file_id: "file-a" }];
    expect(namedFileIds(call(JSON.stringify({ model: "m", input: [{ role: "user", content: parts }], tool_resources: { code_interpreter: { file_ids: ["file-b"] } } })))).toEqual(["file-a", "file-b"]);
  });

  test("a key written with an escape is read as JSON.parse (and the upstream) reads it", () => {
    const body = JSON.stringify({ model: "m", input: [{ role: "user", content: [{ type: "input_file", file_id: "file-x" }] }] }).replace('"file_id"', '"file\\u005fid"');
    expect(namedFileIds(call(body))).toEqual(["file-x"]);
  });

  test("a long conversation: its plain text is not walked; one naming a file is, escaped key or not", () => {
    expect(call(long("more words")).bytes.byteLength).toBeGreaterThan(32 * 1024);
    expect(namedFileIds(call(long("more words")))).toEqual([]);
    expect(namedFileIds(call(long([{ type: "input_file", file_id: "file-big" }])))).toEqual(["file-big"]);
    expect(namedFileIds(call(long([{ type: "input_file", file_id: "file-esc" }]).replace('"file_id"', '"fil\\u0065_id"')))).toEqual(["file-esc"]);
    expect(namedFileIds(call(long([{ type: "text", text: "x", file_ids: ["file-ids"] }])))).toEqual(["file-ids"]);
  });
});
