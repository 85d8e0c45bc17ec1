import { addKey } from "../helpers/keys.ts";
import { sse, json, startMockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter } from "../helpers/router.ts";
const up = startMockUpstream();
const router = await startRouter();
await addKey(router, { provider: up.url, level: 1, config: { provider_type: "standard", formats: ["gemini"] } });
up.route("POST", /.*/, (r) => {
  console.error("UPSTREAM", JSON.stringify(r.json.tools[0].functionDeclarations.find((f:any)=>f.name==="read_file")).slice(0,1500));
  const body = { candidates: [{ content: { role: "model", parts: [{ text: "pong" }] }, finishReason: "STOP", index: 0 }], usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 2, totalTokenCount: 12 }, modelVersion: "acme-gem" };
  if (r.path.endsWith(":countTokens")) return json({ totalTokens: 10 });
  if (r.path.includes("stream")) return sse([body]);
  return json(body);
});
const proc = Bun.spawn(["/tmp/clis/node_modules/.bin/gemini", "-p", "say pong", "-m", "acme-gem", "--output-format", "json"], {
  cwd: "/tmp/agent-ws",
  env: { ...process.env, GEMINI_API_KEY: router.ownerKey, GOOGLE_GEMINI_BASE_URL: router.url, HOME: "/tmp/gemini-home", GEMINI_CLI_NO_RELAUNCH: "1", GEMINI_CLI_TRUST_WORKSPACE: "true" },
  stdout: "pipe", stderr: "pipe",
});
const timer = setTimeout(() => proc.kill(), 60000);
console.log("OUT", (await new Response(proc.stdout).text()).slice(0, 2000));
console.log("ERR", (await new Response(proc.stderr).text()).slice(-3000));
clearTimeout(timer);
for (const l of router.logs.slice(-10)) console.log("LOG", l);
await router.stop(); await up.stop();
