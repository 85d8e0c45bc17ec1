import { addKey } from "../helpers/keys.ts";
import { sse, startMockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter } from "../helpers/router.ts";
const up = startMockUpstream();
const router = await startRouter();
await addKey(router, { provider: up.url, level: 1, config: { provider_type: "standard", formats: ["responses"] } });
up.route("POST", /.*/, (r) => {
  console.error("UPSTREAM", JSON.stringify(r.json.tools.map((t:any)=>t.type+":"+(t.name??""))));
  const resp = { id: "resp_1", object: "response", created_at: 1, status: "completed", model: r.json.model, output: [{ type: "message", id: "msg_1", role: "assistant", status: "completed", content: [{ type: "output_text", text: "pong", annotations: [] }] }], usage: { input_tokens: 10, output_tokens: 2, total_tokens: 12, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } } };
  return sse([
    ["response.created", { type: "response.created", sequence_number: 0, response: { ...resp, status: "in_progress", output: [] } }],
    ["response.output_item.added", { type: "response.output_item.added", sequence_number: 1, output_index: 0, item: { type: "message", id: "msg_1", role: "assistant", status: "in_progress", content: [] } }],
    ["response.output_text.delta", { type: "response.output_text.delta", sequence_number: 2, output_index: 0, item_id: "msg_1", content_index: 0, delta: "pong" }],
    ["response.output_item.done", { type: "response.output_item.done", sequence_number: 3, output_index: 0, item: resp.output[0] }],
    ["response.completed", { type: "response.completed", sequence_number: 4, response: resp }],
  ]);
});
const proc = Bun.spawn(["/tmp/clis/node_modules/.bin/codex", "exec", "--skip-git-repo-check", "-c", "model_provider=router", "-c", `model_providers.router={name="router", base_url="${router.url}/v1", env_key="ROUTER_KEY", wire_api="responses"}`, "-c", "web_search=\"disabled\"", "--dangerously-bypass-approvals-and-sandbox", "-m", "acme-model", "say pong"], {
  cwd: "/tmp/agent-ws",
  env: { ...process.env, ROUTER_KEY: router.ownerKey, CODEX_HOME: "/tmp/codex-home" },
  stdout: "pipe", stderr: "pipe",
});
const timer = setTimeout(() => proc.kill(), 60000);
console.log("OUT", await new Response(proc.stdout).text());
console.log("ERR", (await new Response(proc.stderr).text()).slice(-3000));
clearTimeout(timer);
for (const l of router.logs.slice(-10)) console.log("LOG", l);
await router.stop(); await up.stop();
