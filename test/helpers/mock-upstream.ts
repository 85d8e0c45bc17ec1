import type { Server } from "bun";
import { testCertificates } from "./tls.ts";

/** What the mock saw of one upstream call. */
export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: Headers;
  body: string;
  /** The body parsed as JSON, when it was JSON. */
  json: any;
}

export type Script = (request: RecordedRequest) => Response | Promise<Response>;

interface Route {
  method: string;
  path: string | RegExp;
  script: Script;
}

export interface MockUpstream {
  /** `https://127.0.0.1:<port>` */
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Answers requests matching method and path (string: exact path; RegExp: tested on the path). */
  route(method: string, path: string | RegExp, script: Script): MockUpstream;
  /** Answers the next request, whatever it is, before any route (queue, first in first out). */
  once(script: Script): MockUpstream;
  /** Forgets recorded requests, queued answers and routes. */
  reset(): void;
  stop(): Promise<void>;
}

/**
 * An HTTPS upstream on 127.0.0.1, port 0, with a certificate from the test CA.
 * Unscripted requests get 404 with a JSON error, so a missing script is loud.
 */
export function startMockUpstream(): MockUpstream {
  const certs = testCertificates();
  let routes: Route[] = [];
  let queue: Script[] = [];
  const requests: RecordedRequest[] = [];
  const server: Server<unknown> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: certs.certPem, key: certs.keyPem },
    idleTimeout: 0,
    async fetch(request) {
      const url = new URL(request.url);
      const body = await request.text();
      let json: unknown;
      try {
        json = body ? JSON.parse(body) : undefined;
      } catch {
        json = undefined;
      }
      const recorded: RecordedRequest = {
        method: request.method,
        path: url.pathname,
        query: url.searchParams,
        headers: request.headers,
        body,
        json,
      };
      requests.push(recorded);
      const queued = queue.shift();
      if (queued) return queued(recorded);
      const route = routes.find(
        (r) =>
          r.method === request.method && (typeof r.path === "string" ? r.path === url.pathname : r.path.test(url.pathname)),
      );
      if (route) return route.script(recorded);
      return Response.json({ error: { message: `mock: no script for ${request.method} ${url.pathname}` } }, { status: 404 });
    },
  });
  const mock: MockUpstream = {
    url: `https://127.0.0.1:${server.port}`,
    requests,
    route(method, path, script) {
      routes.push({ method, path, script });
      return mock;
    },
    once(script) {
      queue.push(script);
      return mock;
    },
    reset() {
      routes = [];
      queue = [];
      requests.length = 0;
    },
    async stop() {
      await server.stop(true);
    },
  };
  return mock;
}

/** A JSON answer. */
export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return Response.json(body, { status, headers });
}

/**
 * An OpenAI Chat Completions answer, as the tests' upstreams give it: one assistant
 * message (`content`), finished, reporting `prompt` and `completion` tokens.
 */
export function chatCompletion(model: string | undefined, tokens: { prompt: number; completion: number } = { prompt: 1, completion: 1 }, options: { content?: string; id?: string } = {}): Response {
  return json({
    id: options.id ?? "c",
    object: "chat.completion",
    created: 1,
    model,
    choices: [{ index: 0, message: { role: "assistant", content: options.content ?? "ok" }, finish_reason: "stop" }],
    usage: { prompt_tokens: tokens.prompt, completion_tokens: tokens.completion, total_tokens: tokens.prompt + tokens.completion },
  });
}

/**
 * A 503 whose JSON error body comes in two parts `gapMs` apart: headers and the first
 * bytes at once, the message ("overloaded, slowly") after the gap.
 */
export function slowErrorBody(gapMs: number): Response {
  return new Response(
    new ReadableStream({
      async start(controller) {
        controller.enqueue(new TextEncoder().encode('{"error":'));
        await Bun.sleep(gapMs);
        controller.enqueue(new TextEncoder().encode('{"message":"overloaded, slowly"}}'));
        controller.close();
      },
    }),
    { status: 503, headers: { "content-type": "application/json" } },
  );
}

export interface SseOptions {
  /** Milliseconds before the first event. */
  firstDelayMs?: number;
  /** Milliseconds between events. */
  delayMs?: number;
  /** Append `data: [DONE]` (OpenAI style). Default false. */
  done?: boolean;
  /** Stop after this many events without closing cleanly (simulates a dropped upstream). */
  breakAfter?: number;
}

/**
 * A server-sent event stream. Each item is an object (sent as `data: <json>`), a
 * `[event, object]` pair (sent with an `event:` line, Anthropic style), or a raw string.
 */
export function sse(events: Array<unknown | [string, unknown]>, options: SseOptions = {}): Response {
  const encoder = new TextEncoder();
  const frame = (item: unknown): string => {
    if (typeof item === "string") return item;
    if (Array.isArray(item) && item.length === 2 && typeof item[0] === "string") {
      return `event: ${item[0]}\ndata: ${JSON.stringify(item[1])}\n\n`;
    }
    return `data: ${JSON.stringify(item)}\n\n`;
  };
  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
      if (options.firstDelayMs) await sleep(options.firstDelayMs);
      let sent = 0;
      for (const item of events) {
        if (options.breakAfter !== undefined && sent >= options.breakAfter) {
          controller.error(new Error("mock: upstream dropped the stream"));
          return;
        }
        controller.enqueue(encoder.encode(frame(item)));
        sent++;
        if (options.delayMs) await sleep(options.delayMs);
      }
      if (options.done) controller.enqueue(encoder.encode("data: [DONE]\n\n"));
      controller.close();
    },
  });
  return new Response(stream, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } });
}

/** Never answers (until the client gives up): for timeout tests. */
export function hang(): Promise<Response> {
  return new Promise(() => {});
}
