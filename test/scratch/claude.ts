import { addKey } from "../helpers/keys.ts";
import { sse, startMockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter } from "../helpers/router.ts";
const oa = startMockUpstream();
const router = await startRouter();
await addKey(router, { provider: oa.url, level: 1, config: { provider_type: "standard", formats: ["openai"] } });
const chunk = (model: string, delta: any, finish: string | null = null) => ({ id: "c1", object: "chat.completion.chunk", created: 1, model, choices: [{ index: 0, delta, finish_reason: finish }] });
oa.route("POST", "/v1/chat/completions", (r) => {
  const msgs = r.json.messages;
  const last = msgs[msgs.length - 1];
  console.error("UPSTREAM", msgs.length, last.role, JSON.stringify(last).slice(0, 300), Object.keys(r.json));
  const m = r.json.model;
  const usage = { id: "c1", object: "chat.completion.chunk", created: 1, model: m, choices: [], usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 } };
  if (last.role === "tool") return sse([chunk(m, { role: "assistant", content: "" }), chunk(m, { content: "The note says: " }), chunk(m, { content: String(last.content).includes("periwinkle") ? "periwinkle" : "??" }), chunk(m, {}, "stop"), usage, "[DONE]"]);
  return sse([chunk(m, { role: "assistant", content: null }), chunk(m, { tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "Read", arguments: "" } }] }), chunk(m, { tool_calls: [{ index: 0, function: { arguments: '{"file_path":"/tmp/agent-ws/note.txt"}' } }] }), chunk(m, {}, "tool_calls"), usage, "[DONE]"]);
});
const proc = Bun.spawn(["/tmp/clis/node_modules/.bin/claude", "-p", "What does note.txt say?", "--output-format", "json", "--allowedTools", "Read"], {
  cwd: "/tmp/agent-ws",
  env: { ...process.env, ANTHROPIC_BASE_URL: router.url, ANTHROPIC_API_KEY: router.ownerKey, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1", DISABLE_TELEMETRY: "1", HOME: "/tmp/claude-home" },
  stdout: "pipe", stderr: "pipe",
});
const timer = setTimeout(() => proc.kill(), 60000);
console.log("OUT", await new Response(proc.stdout).text());
console.log("ERR", await new Response(proc.stderr).text());
clearTimeout(timer);
for (const l of router.logs.slice(-10)) console.log("LOG", l);
await router.stop(); await oa.stop();
