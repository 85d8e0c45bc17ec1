import { afterAll, describe, expect, test } from "bun:test";
import { createManualClock } from "../../src/core/clock.ts";
import { addKey } from "../helpers/keys.ts";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter, waitFor, type TestRouter } from "../helpers/router.ts";

// Issue 17: what the system does on its own is in the operation log, with no operator:
// key.auto_sleep, key.auto_wake, level.switch_over, level.switch_back.
const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;
const mocks: MockUpstream[] = [];
const routers: TestRouter[] = [];
afterAll(async () => {
  for (const mock of mocks) await mock.stop();
  for (const router of routers) await router.stop();
});

const completion = { id: "c", object: "chat.completion", created: 1, model: "gpt-x", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } };

function upstream(state: { failing: boolean }): MockUpstream {
  const mock = startMockUpstream().route("POST", "/v1/chat/completions", () => (state.failing ? json({ error: { message: "boom" } }, 500) : json(completion)));
  mocks.push(mock);
  return mock;
}

const chat = (r: TestRouter) =>
  r.fetch("/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "gpt-x", messages: [{ role: "user", content: "hi" }] }) });

type Row = { action: string; operator_id: number | null; details: Record<string, unknown> };
const systemRows = async (r: TestRouter, pattern: string) =>
  ((await (await r.fetch(`/dashboard/logs?action=${encodeURIComponent(pattern)}&size=100`)).json()) as { logs: Row[] }).logs.reverse();

describe("system actions in the operation log", () => {
  test("a key put to sleep by errors and woken by its probe: key.auto_sleep, key.auto_wake, no operator", async () => {
    const clock = createManualClock(T0, "UTC");
    const r = await startRouter({ clock });
    routers.push(r);
    const state = { failing: true };
    const key = await addKey(r, { provider: `${upstream(state).url}/v1` });
    for (let i = 0; i < 3; i++) expect((await chat(r)).status).toBe(502);
    clock.advance(MINUTE);
    state.failing = false;
    expect((await chat(r)).status).toBe(200);
    const rows = (await waitFor(async () => {
      const found = await systemRows(r, "key.auto_*");
      return found.length >= 2 ? found : undefined;
    }))!;
    expect(rows.map((row) => [row.action, row.operator_id])).toEqual([
      ["key.auto_sleep", null],
      ["key.auto_wake", null],
    ]);
    expect(rows[0]!.details).toMatchObject({ key: key.id, level: 1, reason: "errors", until: new Date(T0 + MINUTE).toISOString() });
    expect(rows[1]!.details).toMatchObject({ key: key.id, level: 1 });
  });

  test("a Level switched to its backup and back after a good probe: level.switch_over, level.switch_back, once each", async () => {
    const clock = createManualClock(T0, "UTC");
    const r = await startRouter({ clock });
    routers.push(r);
    await r.deps.settings.update({ LEVEL_MAPPER: "gpt-x=1", SWITCH_OVER: "1=2" });
    const state = { failing: true };
    await addKey(r, { provider: `${upstream(state).url}/v1`, level: 1, noSleep: true });
    await addKey(r, { provider: `${upstream({ failing: false }).url}/v1`, level: 2 });
    for (let i = 0; i < 8; i++) expect((await chat(r)).status).toBe(200);
    expect(r.deps.switchOver.isSwitched(1)).toBe(true);
    clock.advance(MINUTE);
    state.failing = false;
    expect((await chat(r)).status).toBe(200);
    expect(r.deps.switchOver.isSwitched(1)).toBe(false);
    const rows = (await waitFor(async () => {
      const found = await systemRows(r, "level.*");
      return found.length >= 2 ? found : undefined;
    }))!;
    expect(rows.map((row) => [row.action, row.operator_id, row.details.level])).toEqual([
      ["level.switch_over", null, 1],
      ["level.switch_back", null, 1],
    ]);
  });
});
