import { afterAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { HttpError } from "../../src/core/errors.ts";
import { headerParams, spoolMultipart, type SpooledForm } from "../../src/http/multipart.ts";
import { tempDir } from "../helpers/router.ts";

/** The multipart spooler: the body lands on disk unchanged while its text fields are read on the way. */

const dir = tempDir("router-spool-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const LIMIT = 10 * 1024 * 1024;
const encoder = new TextEncoder();

/** A request whose body arrives in the given pieces (no Content-Length). */
function chunked(contentType: string, pieces: Uint8Array[]): Request {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const piece of pieces) controller.enqueue(piece);
      controller.close();
    },
  });
  return new Request("http://router/v1/x", { method: "POST", headers: { "content-type": contentType }, body, duplex: "half" } as RequestInit);
}

async function spool(request: Request, limit = LIMIT): Promise<SpooledForm & { bytes: Uint8Array }> {
  const form = await spoolMultipart(request, limit, dir);
  const bytes = new Uint8Array(readFileSync(form.path));
  form.remove();
  return { ...form, bytes };
}

const spoolFiles = () => readdirSync(dir);

/** A hand-written body: fields before and after a file part, CRLF everywhere, a preamble and an epilogue. */
const BOUNDARY = "XyZ-b0undary";
const HAND = encoder.encode(
  [
    "this preamble is ignored",
    `--${BOUNDARY}`,
    'Content-Disposition: form-data; name="model"',
    "",
    "whisper-1",
    `--${BOUNDARY}`,
    'Content-Disposition: form-data; name="file"; filename="a.mp3"',
    "Content-Type: audio/mpeg",
    "",
    // File bytes that imitate a delimiter without being one.
    `ID3\r\n--${BOUNDARY.slice(0, 5)}\r\n\r\n--XyZ name="model"\r\n\r\nevil`,
    `--${BOUNDARY}`,
    'content-disposition: form-data; name="prompt"',
    "Content-Type: text/plain; charset=utf-8",
    "",
    "line one\r\nline two ünïcode",
    `--${BOUNDARY}`,
    'Content-Disposition: form-data; name="empty"',
    "",
    "",
    `--${BOUNDARY}--`,
    "epilogue",
  ].join("\r\n"),
);
const HAND_FIELDS = { model: "whisper-1", prompt: "line one\r\nline two ünïcode", empty: "" };

describe("spoolMultipart", () => {
  test("a FormData body: the spool file holds the exact bytes; fields before and after the file are read; files counted", async () => {
    const form = new FormData();
    form.set("model", "gpt-image-1");
    form.set("image", new File([new Uint8Array(200_000).map((_, i) => i % 251)], "cat.png", { type: "image/png" }));
    form.append("image", new File(["second"], "dog.png"));
    form.set("prompt", "a hat");
    form.set("n", "2");
    const request = new Request("http://router/v1/images/edits", { method: "POST", body: form });
    const expected = new Uint8Array(await new Request("http://x/", { method: "POST", body: form, headers: { "content-type": request.headers.get("content-type")! } }).arrayBuffer());
    const spooled = await spool(request);
    expect(Object.fromEntries(spooled.fields)).toEqual({ model: "gpt-image-1", prompt: "a hat", n: "2" });
    expect(spooled.files).toBe(2);
    expect(spooled.unclear.size).toBe(0);
    expect(spooled.contentType).toBe(request.headers.get("content-type")!);
    // Same structure and size as an independent serialisation (the boundary differs per serialisation).
    expect(spooled.size).toBe(spooled.bytes.byteLength);
    expect(spooled.size).toBe(expected.byteLength);
    expect(spoolFiles()).toEqual([]);
  });

  test("a hand-written body split at every byte boundary reads the same fields and stores the same bytes", async () => {
    const contentType = `multipart/form-data; boundary=${BOUNDARY}`;
    for (let cut = 0; cut <= HAND.byteLength; cut++) {
      const spooled = await spool(chunked(contentType, [HAND.slice(0, cut), HAND.slice(cut)]));
      expect([cut, Object.fromEntries(spooled.fields)]).toEqual([cut, HAND_FIELDS]);
      expect(spooled.files).toBe(1);
      expect(Buffer.from(spooled.bytes).equals(Buffer.from(HAND))).toBe(true);
    }
  });

  test("one byte per chunk", async () => {
    const pieces = Array.from(HAND, (byte) => new Uint8Array([byte]));
    const spooled = await spool(chunked(`multipart/form-data; boundary=${BOUNDARY}`, pieces));
    expect(Object.fromEntries(spooled.fields)).toEqual(HAND_FIELDS);
    expect(spooled.size).toBe(HAND.byteLength);
  });

  test("a quoted boundary (with characters a token cannot hold) and other parameters around it", async () => {
    const boundary = "quoted:b=ound ary";
    const body = encoder.encode(`--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\ndall-e-2\r\n--${boundary}--\r\n`);
    const spooled = await spool(chunked(`Multipart/Form-Data; charset=utf-8; boundary="${boundary}"; x=y`, [body]));
    expect(spooled.fields.get("model")).toBe("dall-e-2");
  });

  test("a name= inside a quoted filename is not the part's name", async () => {
    const body = encoder.encode(
      `--b\r\nContent-Disposition: form-data; filename="x; name=\\"model"; name="file"\r\n\r\nDATA\r\n--b\r\nContent-Disposition: form-data; name="model"\r\n\r\nreal\r\n--b--\r\n`,
    );
    // A value ending in a backslash is refused as ambiguous…
    expect(((await spool(chunked("multipart/form-data; boundary=b", [body])).catch((e) => e)) as HttpError).status).toBe(400);
    // …and without it, a quoted `name=` stays part of its parameter's value.
    const plain = encoder.encode(
      `--b\r\nContent-Disposition: form-data; filename="x name="; name="file"\r\n\r\nDATA\r\n--b\r\nContent-Disposition: form-data; foo="a name="; name="model"\r\n\r\nreal\r\n--b--\r\n`,
    );
    const spooled = await spool(chunked("multipart/form-data; boundary=b", [plain]));
    expect(Object.fromEntries(spooled.fields)).toEqual({ model: "real" });
    expect(spooled.files).toBe(1);
  });

  test("a field given twice, or longer than 64 KiB, is unclear and not read", async () => {
    const body = encoder.encode(
      [
        "--b",
        'Content-Disposition: form-data; name="model"',
        "",
        "cheap-model",
        "--b",
        'Content-Disposition: form-data; name="big"',
        "",
        "x".repeat(64 * 1024 + 1),
        "--b",
        'Content-Disposition: form-data; name="model"',
        "",
        "dear-model",
        "--b",
        'Content-Disposition: form-data; name="ok"',
        "",
        "fine",
        "--b--",
      ].join("\r\n"),
    );
    const spooled = await spool(chunked("multipart/form-data; boundary=b", [body.slice(0, 1000), body.slice(1000)]));
    expect(Object.fromEntries(spooled.fields)).toEqual({ ok: "fine" });
    expect([...spooled.unclear].sort()).toEqual(["big", "model"]);
  });

  test.each([
    ["no boundary", "multipart/form-data"],
    ["an empty boundary", 'multipart/form-data; boundary=""'],
    ["another type", "application/json; boundary=x"],
    ["no content type", ""],
    ["a boundary given twice", "multipart/form-data; boundary=a; boundary=b"],
  ])("%s is 400 before anything is written", async (_name, contentType) => {
    const request = chunked(contentType, [encoder.encode("--x\r\n")]);
    if (!contentType) request.headers.delete("content-type");
    const error = await spoolMultipart(request, LIMIT, dir).catch((e) => e);
    expect(error).toBeInstanceOf(HttpError);
    expect((error as HttpError).status).toBe(400);
    expect(spoolFiles()).toEqual([]);
  });

  test("a part naming itself twice is 400 and leaves no spool file", async () => {
    const body = encoder.encode('--b\r\nContent-Disposition: form-data; name="a"; name="model"\r\n\r\nx\r\n--b--\r\n');
    const error = await spoolMultipart(chunked("multipart/form-data; boundary=b", [body]), LIMIT, dir).catch((e) => e);
    expect((error as HttpError).status).toBe(400);
    expect(spoolFiles()).toEqual([]);
  });

  test("over the limit: 413 from a declared length before reading, or while streaming; the spool file is removed", async () => {
    let pulled = false;
    const declared = new Request("http://router/", {
      method: "POST",
      headers: { "content-type": "multipart/form-data; boundary=b", "content-length": "5000" },
      body: new ReadableStream({ pull: () => void (pulled = true) }, { highWaterMark: 0 }),
      duplex: "half",
    } as RequestInit);
    expect(((await spoolMultipart(declared, 1000, dir).catch((e) => e)) as HttpError).status).toBe(413);
    expect(pulled).toBe(false);

    const pieces = Array.from({ length: 10 }, () => new Uint8Array(300));
    const streamed = await spoolMultipart(chunked("multipart/form-data; boundary=b", pieces), 1000, dir).catch((e) => e);
    expect((streamed as HttpError).status).toBe(413);
    expect((streamed as HttpError).code).toBe("request_too_large");
    expect(spoolFiles()).toEqual([]);

    // Exactly at the limit is fine.
    const exact = await spool(chunked("multipart/form-data; boundary=b", pieces.slice(0, 3).concat([new Uint8Array(100)])), 1000);
    expect(exact.size).toBe(1000);
  });

  test("the spool file lives in the given directory until removed", async () => {
    const form = await spoolMultipart(chunked(`multipart/form-data; boundary=${BOUNDARY}`, [HAND]), LIMIT, dir);
    expect(form.path.startsWith(join(dir, "upload-"))).toBe(true);
    expect(spoolFiles()).toHaveLength(1);
    form.remove();
    form.remove();
    expect(spoolFiles()).toEqual([]);
  });
});

describe("headerParams", () => {
  test("type and parameters: names lower-cased, quoted values kept whole, unquoted trimmed", () => {
    const { type, params } = headerParams('Form-Data; Name="a; b=c"; filename = plain.txt ;x');
    expect(type).toBe("form-data");
    expect(Object.fromEntries(params)).toEqual({ name: "a; b=c", filename: "plain.txt", x: "" });
  });

  test("backslashes are literal inside quotes, except at the very end (ambiguous)", () => {
    expect(headerParams('form-data; filename="C:\\dir\\a.png"').params.get("filename")).toBe("C:\\dir\\a.png");
    expect(() => headerParams('form-data; name="x\\"; name="model"')).toThrow(HttpError);
  });
});
