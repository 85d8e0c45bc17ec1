/**
 * Streaming load and time-to-first-token client, run in its own process with
 * BUN_CONFIG_MAX_HTTP_REQUESTS raised (Bun's fetch allows only 256 requests at once
 * otherwise). Config as JSON in argv[2]; prints one line `CLIENTJSON {...}`.
 *
 * `concurrency` workers each run streams back to back until `durationMs` has passed
 * (then finish the stream under way). Worker starts are spread over `staggerMs` so
 * arrivals are even, as from many independent clients. A stream's TTFT is the time
 * from calling fetch to its first body bytes; a worker's first stream (which also
 * opens the connection) is left out of the TTFT figures when `skipFirst` is set, but
 * counts for errors and totals. A stream that does not end with `data: [DONE]` is an error.
 */
import { percentile } from "./stats.ts";

export interface ClientConfig {
  url: string;
  headers: Record<string, string>;
  body: string;
  concurrency: number;
  durationMs: number;
  staggerMs: number;
  skipFirst: boolean;
  streamTimeoutMs: number;
}

export interface ClientResult {
  /** Streams finished (any outcome). */
  streams: number;
  ok: number;
  errors: { status: number; network: number; timeout: number; truncated: number };
  /** The first few error messages, for the report. */
  errorSamples: string[];
  chunks: number;
  ttft: { n: number; p50: number; p90: number; p99: number; max: number };
  total: { p50: number; p99: number };
  elapsedMs: number;
}

const config = JSON.parse(process.argv[2]!) as ClientConfig;
const DONE = "data: [DONE]";
const ttft: number[] = [];
const totals: number[] = [];
const errors = { status: 0, network: 0, timeout: 0, truncated: 0 };
const errorSamples: string[] = [];
let streams = 0;
let ok = 0;
let chunks = 0;
const started = performance.now();
const endAt = started + config.durationMs;
const decoder = new TextDecoder();

function fail(kind: keyof typeof errors, message: string) {
  errors[kind]++;
  if (errorSamples.length < 5) errorSamples.push(`${kind}: ${message.slice(0, 200)}`);
}

async function oneStream(measured: boolean): Promise<void> {
  const t0 = performance.now();
  let response: Response;
  try {
    response = await fetch(config.url, {
      method: "POST",
      headers: config.headers,
      body: config.body,
      signal: AbortSignal.timeout(config.streamTimeoutMs),
    });
  } catch (error) {
    const name = (error as Error).name;
    fail(name === "TimeoutError" ? "timeout" : "network", (error as Error).message);
    return;
  }
  if (!response.ok || !response.body) {
    fail("status", `${response.status} ${(await response.text().catch(() => "")).slice(0, 150)}`);
    return;
  }
  let first = -1;
  let tail = "";
  try {
    for await (const value of response.body) {
      if (value.byteLength === 0) continue;
      if (first < 0) first = performance.now();
      chunks++;
      tail = (tail + decoder.decode(value.byteLength > 64 ? value.subarray(value.byteLength - 64) : value)).slice(-64);
    }
  } catch (error) {
    const name = (error as Error).name;
    fail(name === "TimeoutError" ? "timeout" : "network", `mid-stream: ${(error as Error).message}`);
    return;
  }
  if (!tail.includes(DONE)) {
    fail("truncated", `stream ended without [DONE]: ...${JSON.stringify(tail)}`);
    return;
  }
  ok++;
  if (measured) {
    ttft.push(first - t0);
    totals.push(performance.now() - t0);
  }
}

async function worker(index: number): Promise<void> {
  if (config.staggerMs > 0) await Bun.sleep((index / config.concurrency) * config.staggerMs);
  let n = 0;
  do {
    await oneStream(!(config.skipFirst && n === 0));
    streams++;
    n++;
  } while (performance.now() < endAt);
}

await Promise.all(Array.from({ length: config.concurrency }, (_, i) => worker(i)));
ttft.sort((a, b) => a - b);
totals.sort((a, b) => a - b);
const round = (x: number) => Math.round(x * 1000) / 1000;
const result: ClientResult = {
  streams,
  ok,
  errors,
  errorSamples,
  chunks,
  ttft: {
    n: ttft.length,
    p50: round(percentile(ttft, 50)),
    p90: round(percentile(ttft, 90)),
    p99: round(percentile(ttft, 99)),
    max: round(ttft[ttft.length - 1] ?? NaN),
  },
  total: { p50: round(percentile(totals, 50)), p99: round(percentile(totals, 99)) },
  elapsedMs: Math.round(performance.now() - started),
};
console.log(`CLIENTJSON ${JSON.stringify(result)}`);
