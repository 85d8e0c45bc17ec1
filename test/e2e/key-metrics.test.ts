import { afterAll, beforeAll, expect, test } from "bun:test";
import { addKey } from "../helpers/keys.ts";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { api } from "../helpers/owner-ops.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";

/**
 * Issue 17: /metrics counts upstream attempts, failures and their duration per provider
 * key (labelled by key id and Level, never a name or secret) and per Level.
 */

let router: TestRouter;
let upstream: MockUpstream;
const keys: Array<{ id: number; secret: string }> = [];

beforeAll(async () => {
  router = await startRouter();
  upstream = startMockUpstream().route("POST", "/v1/chat/completions", () =>
    json({ id: "c", object: "chat.completion", created: 1, model: "m", choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }),
  );
  keys.push(await addKey(router, { provider: `${upstream.url}/v1`, name: "secret-bearing-name-a", noSleep: true }));
  keys.push(await addKey(router, { provider: `${upstream.url}/v1`, name: "secret-bearing-name-b", noSleep: true }));
});

afterAll(async () => {
  await upstream.stop();
  await router.stop();
});

const scrape = async () => (await router.fetch("/metrics")).text();
const value = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(series + " "));
  return line ? Number(line.slice(series.length + 1)) : 0;
};

test("per key and per Level: attempts, failures by kind and latency, matching the calls' attempts", async () => {
  const before = await scrape();
  upstream.once(() => json({ error: { message: "down" } }, 503));
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await router.fetch("/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "gpt-m", messages: [{ role: "user", content: "hi" }] }) });
    expect(res.status).toBe(200);
    await res.text();
    ids.push(res.headers.get("x-request-id")!);
  }
  await router.deps.usageRecorder.flush();
  const after = await scrape();
  const delta = (series: string) => value(after, series) - value(before, series);

  // What the request log says each key did.
  const attempts = new Map<number, { requests: number; errors: number }>();
  for (const id of ids) {
    for (const attempt of (await api(router, `/x-requests/${id}`)).body.attempts as Array<{ key_id: number; error: string | null }>) {
      const figures = attempts.get(attempt.key_id) ?? { requests: 0, errors: 0 };
      figures.requests++;
      if (attempt.error) figures.errors++;
      attempts.set(attempt.key_id, figures);
    }
  }
  let total = 0;
  for (const { id } of keys) {
    const figures = attempts.get(id) ?? { requests: 0, errors: 0 };
    total += figures.requests;
    expect(delta(`router_key_requests_total{key="${id}",level="1"}`)).toBe(figures.requests);
    expect(delta(`router_key_errors_total{key="${id}",level="1",error="status"}`)).toBe(figures.errors);
    expect(delta(`router_key_latency_seconds_count{key="${id}",level="1"}`)).toBe(figures.requests);
  }
  // Three calls, one of which failed over: four attempts, one failure.
  expect(total).toBe(4);
  expect(delta('router_level_requests_total{level="1"}')).toBe(4);
  expect(delta('router_level_errors_total{level="1",error="status"}')).toBe(1);
  expect(delta('router_level_latency_seconds_count{level="1"}')).toBe(4);
  expect(value(after, 'router_level_latency_seconds_bucket{level="1",le="+Inf"}')).toBe(value(after, 'router_level_latency_seconds_count{level="1"}'));
  // Ids only: never a key's name or secret.
  for (const { secret } of keys) expect(after).not.toContain(secret);
  expect(after).not.toContain("secret-bearing-name");
});
