import { describe, expect, test } from "bun:test";
import { answerQuantities, createdObjects, streamedObjects, streamedResponseId } from "../../src/gateway/created-objects.ts";
import type { Endpoint } from "../../src/formats/format.ts";
import { OPENAI_ENDPOINTS } from "../../src/formats/openai/endpoints.ts";

/** Reading the ids of created objects and the priced quantities out of upstream answers. */

const endpoint = (creates: Endpoint["creates"]): Endpoint => ({ family: "openai", path: "/v1/x", model: "none", idempotent: true, creates });

describe("createdObjects", () => {
  test("a response, a file and a thread are bound by their id", () => {
    expect(createdObjects(OPENAI_ENDPOINTS["/v1/responses"]!, { id: "resp_1", object: "response" })).toEqual([{ id: "resp_1", kind: "response" }]);
    expect(createdObjects(endpoint("file"), { id: "file-1", object: "file" })).toEqual([{ id: "file-1", kind: "file" }]);
    expect(createdObjects(endpoint("thread"), { id: "thread_1" })).toEqual([{ id: "thread_1", kind: "thread" }]);
  });

  test("a run binds itself and its thread (create-and-run makes both)", () => {
    expect(createdObjects(endpoint("run"), { id: "run_1", thread_id: "thread_9" })).toEqual([
      { id: "run_1", kind: "run" },
      { id: "thread_9", kind: "thread" },
    ]);
    expect(createdObjects(endpoint("run"), { id: "run_1" })).toEqual([{ id: "run_1", kind: "run" }]);
  });

  test("a video job is bound by its request_id, else its id", () => {
    const video = OPENAI_ENDPOINTS["/v1/videos/generations"]!;
    expect(createdObjects(video, { request_id: "vr_1", id: "other" })).toEqual([{ id: "vr_1", kind: "video" }]);
    expect(createdObjects(video, { id: "video_1" })).toEqual([{ id: "video_1", kind: "video" }]);
  });

  test("nothing from endpoints that create nothing, odd bodies, or ids that are not sane strings", () => {
    expect(createdObjects(OPENAI_ENDPOINTS["/v1/chat/completions"]!, { id: "chatcmpl-1" })).toEqual([]);
    for (const body of [null, undefined, "resp_1", 42, [], { id: 7 }, { id: "" }, { id: "x".repeat(257) }, { id: { nested: 1 } }]) {
      expect(createdObjects(endpoint("response"), body)).toEqual([]);
    }
    expect(createdObjects(endpoint("response"), { id: "x".repeat(256) })).toHaveLength(1);
  });
});

describe("streamedResponseId", () => {
  test("the id announced by response.created, nothing from other events or broken data", () => {
    const created = JSON.stringify({ type: "response.created", sequence_number: 0, response: { id: "resp_7", status: "in_progress" } });
    expect(streamedResponseId(created)).toBe("resp_7");
    expect(streamedResponseId(JSON.stringify({ type: "response.completed", response: { id: "resp_7" } }))).toBeUndefined();
    expect(streamedResponseId(JSON.stringify({ type: "response.output_text.delta", delta: '"response.created"' }))).toBeUndefined();
    expect(streamedResponseId('{"type":"response.created", broken')).toBeUndefined();
    expect(streamedResponseId(JSON.stringify({ type: "response.created", response: { id: 5 } }))).toBeUndefined();
    expect(streamedResponseId("[DONE]")).toBeUndefined();
  });
});

describe("streamedObjects", () => {
  const run = { id: "run_3", object: "thread.run", thread_id: "thread_3", status: "queued" };
  test("a run stream binds the thread (thread.created) and the run with its thread (thread.run.created)", () => {
    const runs = endpoint("run");
    expect(streamedObjects(runs, { event: "thread.created", data: JSON.stringify({ id: "thread_3", object: "thread" }) })).toEqual([{ id: "thread_3", kind: "thread" }]);
    expect(streamedObjects(runs, { event: "thread.run.created", data: JSON.stringify(run) })).toEqual([
      { id: "run_3", kind: "run" },
      { id: "thread_3", kind: "thread" },
    ]);
  });

  test("other events, broken data and endpoints that create nothing bind nothing", () => {
    const runs = endpoint("run");
    expect(streamedObjects(runs, { event: "thread.run.in_progress", data: JSON.stringify(run) })).toEqual([]);
    expect(streamedObjects(runs, { event: "thread.message.created", data: JSON.stringify({ id: "msg_1", thread_id: "thread_3" }) })).toEqual([]);
    expect(streamedObjects(runs, { event: "done", data: "[DONE]" })).toEqual([]);
    expect(streamedObjects(runs, { event: "thread.run.created", data: "{broken" })).toEqual([]);
    expect(streamedObjects(runs, { event: "thread.run.created", data: "null" })).toEqual([]);
    expect(streamedObjects(runs, { data: JSON.stringify(run) })).toEqual([]);
    expect(streamedObjects(OPENAI_ENDPOINTS["/v1/chat/completions"]!, { event: "thread.run.created", data: JSON.stringify(run) })).toEqual([]);
  });

  test("a Responses stream binds the id of response.created", () => {
    const data = JSON.stringify({ type: "response.created", response: { id: "resp_9" } });
    expect(streamedObjects(OPENAI_ENDPOINTS["/v1/responses"]!, { event: "response.created", data })).toEqual([{ id: "resp_9", kind: "response" }]);
    expect(streamedObjects(endpoint("run"), { event: "response.created", data })).toEqual([]);
  });
});

describe("answerQuantities", () => {
  test("images made, from the answer's data array", () => {
    expect(answerQuantities({ created: 1, data: [{ url: "a" }, { url: "b" }] })).toEqual({ images: 2 });
    expect(answerQuantities({ data: [] })).toEqual({ images: 0 });
  });

  test("seconds of audio from usage.type=duration, else a verbose transcription's duration", () => {
    expect(answerQuantities({ text: "x", usage: { type: "duration", seconds: 42.5 } })).toEqual({ seconds: 42.5 });
    expect(answerQuantities({ text: "x", duration: 7, usage: { type: "duration", seconds: 9 } })).toEqual({ seconds: 9 });
    expect(answerQuantities({ text: "x", duration: 7 })).toEqual({ seconds: 7 });
    // Token usage is not a duration.
    expect(answerQuantities({ text: "x", usage: { type: "tokens", input_tokens: 5, seconds: 3 } })).toBeUndefined();
  });

  test("nothing from answers without quantities or with nonsense values", () => {
    for (const body of [null, "x", 3, {}, { data: "x" }, { duration: -1 }, { duration: "12" }, { usage: { type: "duration", seconds: Number.NaN } }]) {
      expect(answerQuantities(body)).toBeUndefined();
    }
  });
});
