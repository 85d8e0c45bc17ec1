import { expect, test } from "bun:test";
import { HttpError } from "../../src/core/errors.ts";
import { readBodyBytes, readJsonObject } from "../../src/http/body.ts";

const streamOf = (chunks: number, size: number) =>
  new ReadableStream<Uint8Array>({
    pull(controller) {
      if (chunks-- <= 0) return controller.close();
      controller.enqueue(new Uint8Array(size));
    },
  });

test("a declared length over the limit is refused before reading", async () => {
  let pulled = false;
  const body = new ReadableStream<Uint8Array>({ pull: () => void (pulled = true) }, { highWaterMark: 0 });
  const request = new Request("http://x/", { method: "POST", body, headers: { "content-length": "2000" } });
  const error = await readBodyBytes(request, 1000).catch((e) => e);
  expect(error).toBeInstanceOf(HttpError);
  expect((error as HttpError).status).toBe(413);
  expect(pulled).toBe(false);
});

test("an undeclared body is cut off as soon as it passes the limit", async () => {
  const request = new Request("http://x/", { method: "POST", body: streamOf(100, 100) });
  const error = await readBodyBytes(request, 1000).catch((e) => e);
  expect((error as HttpError).status).toBe(413);
  const ok = new Request("http://x/", { method: "POST", body: streamOf(10, 100) });
  expect((await readBodyBytes(ok, 1000)).byteLength).toBe(1000);
});

test("JSON bodies: malformed, empty and non-object bodies are 400 with a reason", async () => {
  const post = (body: string) => new Request("http://x/", { method: "POST", body });
  expect(await readJsonObject(post('{"a":1}'), 100)).toEqual({ a: 1 });
  for (const [body, reason] of [["{", /not valid JSON/], ["", /empty/], ["[1]", /JSON object/], ["null", /JSON object/]] as const) {
    const error = (await readJsonObject(post(body), 100).catch((e) => e)) as HttpError;
    expect(error.status).toBe(400);
    expect(error.message).toMatch(reason);
  }
});
