import { afterAll, beforeAll, expect, test } from "bun:test";
import { addKey } from "../helpers/keys.ts";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";
import { openaiClient } from "../helpers/sdk.ts";

let router: TestRouter;
let upstream: MockUpstream;
let secret: string;
const TOKEN = "metrics-token-0123456789";

beforeAll(async () => {
  upstream = startMockUpstream();
  router = await startRouter({ config: { metricsToken: TOKEN } });
  secret = (await addKey(router, { provider: `${upstream.url}/v1` })).secret;
  upstream.route("POST", "/v1/chat/completions", (req) =>
    json({ id: "c", object: "chat.completion", created: 1, model: req.json.model, choices: [], usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 } }),
  );
});
afterAll(async () => {
  await router.stop();
  await upstream.stop();
});

const scrape = async (key: string | null = TOKEN) => {
  const res = await router.fetch("/metrics", { key });
  return { status: res.status, text: await res.text(), type: res.headers.get("content-type") };
};

const value = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(series + " "));
  return line ? Number(line.slice(series.length + 1)) : 0;
};

test("the metrics token or an owner key may read /metrics; nobody else", async () => {
  expect((await scrape()).status).toBe(200);
  expect((await scrape(router.ownerKey)).status).toBe(200);
  expect((await scrape(null)).status).toBe(401);
  expect((await scrape("metrics-token-wrong00000")).status).toBe(401);
  const created = await router.fetch("/x-users", { method: "POST", body: JSON.stringify({ Email: "m@example.com" }) });
  const { APIKey } = await created.json();
  expect((await scrape(APIKey)).status).toBe(403);
  expect((await scrape()).type).toContain("text/plain");
});

test("values move with traffic: requests, tokens, latency, refusals, key states", async () => {
  const before = (await scrape()).text;
  const series = 'router_requests_total{family="openai",model="gpt-4o-mini",level="1",status="200"}';
  const client = openaiClient(router.url, router.ownerKey);
  await client.chat.completions.create({ model: "gpt-4o-mini", messages: [] });
  await client.chat.completions.create({ model: "gpt-4o-mini", messages: [] });
  await router.deps.usageRecorder.flush();
  const after = (await scrape()).text;
  expect(value(after, series) - value(before, series)).toBe(2);
  expect(value(after, 'router_tokens_total{model="gpt-4o-mini",kind="prompt"}')).toBeGreaterThanOrEqual(22);
  expect(value(after, 'router_request_duration_seconds_count{family="openai"}')).toBeGreaterThanOrEqual(2);
  expect(value(after, 'router_upstream_first_byte_seconds_count{family="openai"}')).toBeGreaterThanOrEqual(2);
  expect(value(after, 'router_provider_keys{state="enabled"}')).toBe(1);

  await router.fetch("/v1/chat/completions", { method: "POST", body: '{"model":"x"}', key: "sk-rt-nope-nope-nope-nope" });
  await router.deps.settings.update({ MODEL_LIMITS: { "limited-*": { rpm: 0 } } });
  await router.fetch("/v1/chat/completions", { method: "POST", body: '{"model":"limited-1","messages":[]}' });
  const refused = (await scrape()).text;
  expect(value(refused, 'router_refusals_total{code="rpm_limit_reached"}')).toBe(1);

  await router.deps.pool.setManualSleep(router.deps.pool.all()[0]!.id, true);
  expect(value((await scrape()).text, 'router_provider_keys{state="sleeping_manual"}')).toBe(1);
  await router.deps.pool.setManualSleep(router.deps.pool.all()[0]!.id, false);
});

test("no label carries a key, a secret or an account email", async () => {
  const text = (await scrape()).text;
  expect(text).not.toContain(secret);
  expect(text).not.toContain(router.ownerKey);
  expect(text).not.toContain(TOKEN);
  expect(text).not.toContain("@");
});
