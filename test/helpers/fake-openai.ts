import { noiseBytes, startRawUpstream, type RawRequest, type RawUpstream } from "./raw-upstream.ts";

/**
 * A small stateful imitation of the OpenAI API behind one provider key, for the
 * object and affinity tests: it keeps the files, threads, responses and video jobs
 * created on it, and names every id after itself (`file-m1-3`, `resp_m1_4`…) so a
 * test can tell which upstream (which provider key) created an object.
 */

export interface FakeOpenAI extends RawUpstream {
  /** Files stored here, by id. */
  readonly files: Map<string, { meta: Record<string, unknown>; content: Uint8Array<ArrayBuffer> }>;
  /** Calls seen on paths matching `pattern` (method and path). */
  saw(pattern: RegExp): RawRequest[];
}

/** Seconds of audio a transcription reports; a translation reports a third of it. */
export const TRANSCRIBED_SECONDS = 90;
/** Bytes of the speech audio the fake returns. */
export const SPEECH_BYTES = 200 * 1024;

const sseFrame = (event: string | undefined, data: unknown) =>
  `${event ? `event: ${event}\n` : ""}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;

function sseOf(frames: string[]): Response {
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      for (const frame of frames) {
        controller.enqueue(encoder.encode(frame));
        await Bun.sleep(1);
      }
      controller.close();
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream" } });
}

async function formOf(req: RawRequest): Promise<FormData> {
  return new Response(req.bytes, { headers: { "content-type": req.headers.get("content-type") ?? "" } }).formData();
}

const notFound = (what: string) => Response.json({ error: { message: `No such ${what}`, type: "invalid_request_error", code: null } }, { status: 404 });

export function startFakeOpenAI(name: string): FakeOpenAI {
  const mock = startRawUpstream(name) as FakeOpenAI;
  let seq = 0;
  const next = () => ++seq;
  const files = new Map<string, { meta: Record<string, unknown>; content: Uint8Array<ArrayBuffer> }>();
  const threads = new Map<string, Record<string, unknown>>();
  const runs = new Map<string, Record<string, unknown>>();
  const responses = new Map<string, Record<string, unknown>>();
  const videos = new Map<string, Record<string, unknown>>();
  (mock as { files: unknown }).files = files;
  mock.saw = (pattern) => mock.requests.filter((r) => pattern.test(`${r.method} ${r.path}`));

  const imageAnswer = (model: string, n: number) => ({
    created: 1,
    data: Array.from({ length: n }, (_, i) => ({ url: `https://img.example/${name}/${i}.png` })),
    ...(model === "acme-image-tokens" && {
      usage: { input_tokens: 50, output_tokens: 4000, total_tokens: 4050, input_tokens_details: { text_tokens: 40, image_tokens: 10 } },
    }),
  });
  const thread = () => {
    const id = `thread_${name}_${next()}`;
    const row = { id, object: "thread", created_at: 1, metadata: {}, tool_resources: null };
    threads.set(id, row);
    return row;
  };
  const run = (threadId: string, assistantId: unknown) => {
    const id = `run_${name}_${next()}`;
    const row = { id, object: "thread.run", created_at: 1, thread_id: threadId, assistant_id: assistantId, status: "queued", model: "gpt-4o", instructions: "", tools: [], metadata: {} };
    runs.set(id, row);
    return row;
  };
  const runStream = (frames: string[], row: Record<string, unknown>) =>
    sseOf([
      ...frames,
      sseFrame("thread.run.created", row),
      sseFrame("thread.run.in_progress", { ...row, status: "in_progress" }),
      sseFrame("thread.run.completed", { ...row, status: "completed" }),
      sseFrame("done", "[DONE]"),
    ]);
  const response = (model: unknown, status = "completed") => {
    const id = `resp_${name}_${next()}`;
    const row = {
      id,
      object: "response",
      created_at: 1,
      status,
      model,
      output: [{ type: "message", id: `msg_${name}_${seq}`, status: "completed", role: "assistant", content: [{ type: "output_text", text: "ok", annotations: [] }] }],
      usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 },
    };
    responses.set(id, row);
    return row;
  };

  mock
    // Images: `n` images (from the JSON body or the form); gpt-image-1 style token usage for acme-image-tokens.
    .route("POST", "/v1/images/generations", (req) => Response.json(imageAnswer(req.json.model, Number(req.json.n ?? 1))))
    .route("POST", /^\/v1\/images\/(edits|variations)$/, async (req) => {
      const form = await formOf(req);
      return Response.json(imageAnswer(String(form.get("model") ?? "dall-e-2"), Number(form.get("n") ?? 1)));
    })
    // Audio.
    .route("POST", "/v1/audio/transcriptions", () => Response.json({ text: "hello", usage: { type: "duration", seconds: TRANSCRIBED_SECONDS } }))
    .route("POST", "/v1/audio/translations", () => Response.json({ text: "hello", usage: { type: "duration", seconds: TRANSCRIBED_SECONDS / 3 } }))
    .route("POST", "/v1/audio/speech", () => new Response(noiseBytes(SPEECH_BYTES, 11), { headers: { "content-type": "audio/mpeg" } }))
    .route("POST", "/v1/moderations", (req) =>
      Response.json({ id: `modr-${name}`, model: req.json?.model ?? "omni-moderation-latest", results: [{ flagged: false, categories: {}, category_scores: {} }] }),
    )
    // Files.
    .route("POST", "/v1/files", async (req) => {
      const form = await formOf(req);
      const file = form.get("file") as File;
      const id = `file-${name}-${next()}`;
      const meta = { id, object: "file", bytes: file.size, created_at: 1, filename: file.name, purpose: form.get("purpose"), status: "processed" };
      files.set(id, { meta, content: new Uint8Array(await file.arrayBuffer()) });
      return Response.json(meta);
    })
    .route("GET", "/v1/files", () =>
      // The upstream account also holds files the router never created.
      Response.json({ object: "list", data: [...[...files.values()].map((f) => f.meta), { id: `file-${name}-foreign`, object: "file", bytes: 1, created_at: 1, filename: "x", purpose: "batch" }], has_more: false }),
    )
    .route("GET", /^\/v1\/files\/[^/]+$/, (req) => {
      const file = files.get(req.path.split("/")[3]!);
      return file ? Response.json(file.meta) : notFound("file");
    })
    .route("GET", /^\/v1\/files\/[^/]+\/content$/, (req) => {
      const file = files.get(req.path.split("/")[3]!);
      return file ? new Response(file.content, { headers: { "content-type": "application/octet-stream" } }) : notFound("file");
    })
    .route("DELETE", /^\/v1\/files\/[^/]+$/, (req) => {
      const id = req.path.split("/")[3]!;
      return files.delete(id) ? Response.json({ id, object: "file", deleted: true }) : notFound("file");
    })
    // Threads, messages and runs.
    .route("POST", "/v1/threads", () => Response.json(thread()))
    .route("POST", "/v1/threads/runs", (req) => {
      const t = thread();
      const row = run(t.id, req.json.assistant_id);
      return req.json.stream ? runStream([sseFrame("thread.created", t)], row) : Response.json(row);
    })
    .route("GET", /^\/v1\/threads\/[^/]+$/, (req) => {
      const t = threads.get(req.path.split("/")[3]!);
      return t ? Response.json(t) : notFound("thread");
    })
    .route("DELETE", /^\/v1\/threads\/[^/]+$/, (req) => {
      const id = req.path.split("/")[3]!;
      return threads.delete(id) ? Response.json({ id, object: "thread.deleted", deleted: true }) : notFound("thread");
    })
    .route("POST", /^\/v1\/threads\/[^/]+\/messages$/, (req) => {
      const threadId = req.path.split("/")[3]!;
      if (!threads.has(threadId)) return notFound("thread");
      return Response.json({ id: `msg_${name}_${next()}`, object: "thread.message", created_at: 1, thread_id: threadId, role: req.json.role, content: [{ type: "text", text: { value: req.json.content, annotations: [] } }], metadata: {} });
    })
    .route("POST", /^\/v1\/threads\/[^/]+\/runs$/, (req) => {
      const threadId = req.path.split("/")[3]!;
      if (!threads.has(threadId)) return notFound("thread");
      const row = run(threadId, req.json.assistant_id);
      return req.json.stream ? runStream([], row) : Response.json(row);
    })
    .route("GET", /^\/v1\/threads\/[^/]+\/runs\/[^/]+$/, (req) => {
      const r = runs.get(req.path.split("/")[5]!);
      return r ? Response.json({ ...r, status: "completed" }) : notFound("run");
    })
    // Responses.
    .route("POST", "/v1/responses", (req) => {
      if (req.json.previous_response_id && !responses.has(req.json.previous_response_id)) return notFound("previous response");
      const row = response(req.json.model, req.json.stream ? "in_progress" : "completed");
      if (!req.json.stream) return Response.json(row);
      return sseOf([
        sseFrame("response.created", { type: "response.created", sequence_number: 0, response: row }),
        sseFrame("response.output_text.delta", { type: "response.output_text.delta", sequence_number: 1, item_id: "x", output_index: 0, content_index: 0, delta: "ok" }),
        sseFrame("response.completed", { type: "response.completed", sequence_number: 2, response: { ...row, status: "completed" } }),
      ]);
    })
    .route("GET", /^\/v1\/responses\/[^/]+$/, (req) => {
      const r = responses.get(req.path.split("/")[3]!);
      return r ? Response.json(r) : notFound("response");
    })
    .route("DELETE", /^\/v1\/responses\/[^/]+$/, (req) => {
      const id = req.path.split("/")[3]!;
      return responses.delete(id) ? Response.json({ id, object: "response", deleted: true }) : notFound("response");
    })
    .route("POST", /^\/v1\/responses\/[^/]+\/cancel$/, (req) => {
      const r = responses.get(req.path.split("/")[3]!);
      return r ? Response.json({ ...r, status: "cancelled" }) : notFound("response");
    })
    .route("GET", /^\/v1\/responses\/[^/]+\/input_items$/, (req) => {
      const id = req.path.split("/")[3]!;
      if (!responses.has(id)) return notFound("response");
      return Response.json({ object: "list", data: [{ id: `msg_in_${id}`, type: "message", role: "user", status: "completed", content: [{ type: "input_text", text: "hi" }] }], first_id: `msg_in_${id}`, last_id: `msg_in_${id}`, has_more: false });
    })
    // Video jobs (request_id style).
    .route("POST", "/v1/videos/generations", (req) => {
      const requestId = `vidreq_${name}_${next()}`;
      videos.set(requestId, { request_id: requestId, model: req.json.model, status: "pending" });
      return Response.json({ request_id: requestId });
    })
    .route("GET", /^\/v1\/videos\/[^/]+$/, (req) => {
      const job = videos.get(req.path.split("/")[3]!);
      return job ? Response.json({ ...job, status: "done", video: { url: `https://video.example/${name}.mp4`, duration: 8 } }) : notFound("video");
    });
  return mock;
}
