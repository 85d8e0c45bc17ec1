import type { Server } from "bun";
import { createServer, type Server as TlsServer } from "node:tls";
import { testCertificates } from "./tls.ts";

/**
 * HTTPS upstreams for the multipart, file and binary tests: like mock-upstream.ts,
 * but each recorded request keeps its body as raw bytes (a text decode would hide a
 * changed byte in an uploaded image), and scripts get those bytes too.
 */

export interface RawRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: Headers;
  bytes: Uint8Array<ArrayBuffer>;
  /** The body decoded as UTF-8. */
  text: string;
  /** The body parsed as JSON, when it was JSON. */
  json: any;
}

export type RawScript = (request: RawRequest) => Response | Promise<Response>;

export interface RawUpstream {
  /** `https://127.0.0.1:<port>` */
  readonly url: string;
  /** A short name to tell mocks apart in ids and assertions. */
  readonly name: string;
  readonly requests: RawRequest[];
  route(method: string, path: string | RegExp, script: RawScript): RawUpstream;
  /** Answers the next request, whatever it is, before any route (first in, first out). */
  once(script: RawScript): RawUpstream;
  /** Forgets recorded requests and queued answers, keeping the routes. */
  clear(): void;
  reset(): void;
  stop(): Promise<void>;
}

export function startRawUpstream(name = "mock"): RawUpstream {
  const certs = testCertificates();
  let routes: Array<{ method: string; path: string | RegExp; script: RawScript }> = [];
  let queue: RawScript[] = [];
  const requests: RawRequest[] = [];
  const server: Server<unknown> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: certs.certPem, key: certs.keyPem },
    idleTimeout: 0,
    maxRequestBodySize: 64 * 1024 * 1024,
    async fetch(request) {
      const url = new URL(request.url);
      const bytes = new Uint8Array(await request.arrayBuffer());
      const text = new TextDecoder().decode(bytes);
      let json: unknown;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      const recorded: RawRequest = { method: request.method, path: url.pathname, query: url.searchParams, headers: request.headers, bytes, text, json };
      requests.push(recorded);
      const queued = queue.shift();
      if (queued) return queued(recorded);
      const route = routes.find((r) => r.method === request.method && (typeof r.path === "string" ? r.path === url.pathname : r.path.test(url.pathname)));
      if (route) return route.script(recorded);
      return Response.json({ error: { message: `mock ${name}: no script for ${request.method} ${url.pathname}` } }, { status: 404 });
    },
  });
  const mock: RawUpstream = {
    url: `https://127.0.0.1:${server.port}`,
    name,
    requests,
    route(method, path, script) {
      routes.push({ method, path, script });
      return mock;
    },
    once(script) {
      queue.push(script);
      return mock;
    },
    clear() {
      queue = [];
      requests.length = 0;
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

export interface DroppingUpstream {
  readonly url: string;
  /** Bodies received in full before the connection was cut. */
  readonly received: Uint8Array<ArrayBuffer>[];
  stop(): Promise<void>;
}

/**
 * An HTTPS upstream that reads each request to its last body byte (Content-Length)
 * and then cuts the connection without answering: the upstream certainly has the
 * body, the router sees a network failure.
 */
export function startDroppingUpstream(): Promise<DroppingUpstream> {
  const certs = testCertificates();
  const received: Uint8Array<ArrayBuffer>[] = [];
  const server: TlsServer = createServer({ cert: certs.certPem, key: certs.keyPem }, (socket) => {
    let buffered = Buffer.alloc(0);
    socket.on("data", (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf("\r\n\r\n");
      if (end < 0) return;
      const head = buffered.subarray(0, end).toString("latin1");
      const body = buffered.subarray(end + 4);
      if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) {
        // The last chunk of a chunked body: the whole body has arrived.
        if (!body.subarray(-5).equals(Buffer.from("0\r\n\r\n"))) return;
        received.push(new Uint8Array(body));
      } else {
        const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
        if (body.length < length) return;
        received.push(new Uint8Array(body.subarray(0, length)));
      }
      socket.destroy();
    });
    socket.on("error", () => {});
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      resolve({
        url: `https://127.0.0.1:${port}`,
        received,
        stop: () => new Promise<void>((done) => server.close(() => done())),
      });
    });
  });
}

/** Deterministic pseudo-random bytes (every byte value occurs), for byte-identity checks. */
export function noiseBytes(size: number, seed = 1): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}
