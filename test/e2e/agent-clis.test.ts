import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureAgentClis, type AgentCli } from "../../scripts/agent-clis.ts";
import type { KeyFormat } from "../../src/wire/constants.ts";
import { startAgentUpstream, type AgentScript } from "../helpers/agent-upstream.ts";
import { CANNED_USAGE } from "../helpers/format-answers.ts";
import { addKey, usageRows } from "../helpers/keys.ts";
import { startRouter, waitFor, type TestRouter } from "../helpers/router.ts";

/**
 * Issue 16: real agent CLIs, pointed at the router by their documented base-URL
 * settings, each served by upstreams of the three formats it does not speak. Every run
 * is one agent turn: the upstream (a mock speaking its own format, written independently
 * of the translators) streams a tool call, the CLI runs the tool for real (reads a file
 * in its workspace), sends the result back through the router, and the upstream's
 * streamed answer quoting the file becomes the CLI's final answer.
 *
 * The CLIs are installed on first use at pinned versions (scripts/agent-clis.ts).
 */

const SECRET = "periwinkle";
const PRICING = { ChatPricing: { "*": { InputText: 1, OutputText: 4, CachedText: 0.25 } } };

let router: TestRouter;
let bins: Record<AgentCli, string>;
let home: string;
let workspace: string;
let level = 10;

beforeAll(async () => {
  bins = await ensureAgentClis();
  router = await startRouter({ pricing: PRICING });
  home = mkdtempSync(join(tmpdir(), "agent-home-"));
  workspace = mkdtempSync(join(tmpdir(), "agent-ws-"));
  writeFileSync(join(workspace, "note.txt"), `the secret word is ${SECRET}\n`);
  // Gemini CLI asks which authentication to use unless its settings say.
  mkdirSync(join(home, ".gemini"), { recursive: true });
  writeFileSync(
    join(home, ".gemini", "settings.json"),
    JSON.stringify({ security: { auth: { selectedType: "gemini-api-key" } }, general: { disableAutoUpdate: true }, privacy: { usageStatisticsEnabled: false }, telemetry: { enabled: false } }),
  );
}, 300_000);

afterAll(async () => {
  await router?.stop();
  rmSync(home, { recursive: true, force: true });
  rmSync(workspace, { recursive: true, force: true });
});

/** The tool each CLI offers for reading a file, with the arguments that read the note. */
function scriptFor(cli: AgentCli): AgentScript {
  const answer = (result: string) => (result.includes(SECRET) ? `The note says ${SECRET}.` : "The note could not be read.");
  switch (cli) {
    case "claude": return { tool: "Read", args: { file_path: join(workspace, "note.txt") }, answer };
    case "codex": return { tool: "exec_command", args: { cmd: "cat note.txt" }, answer };
    case "gemini": return { tool: "read_file", args: { file_path: join(workspace, "note.txt") }, answer };
  }
}

const PROMPT = "What does note.txt say?";

/** Runs a CLI once, non-interactively, against the router; its final answer text. */
async function runCli(cli: AgentCli, model: string): Promise<{ answer: string; output: string }> {
  const base = { PATH: process.env.PATH ?? "", HOME: home, LANG: "C.UTF-8" };
  const command: Record<AgentCli, { args: string[]; env: Record<string, string> }> = {
    claude: {
      args: [bins.claude, "-p", PROMPT, "--output-format", "json", "--allowedTools", "Read", "--model", model],
      env: { ANTHROPIC_BASE_URL: router.url, ANTHROPIC_API_KEY: router.ownerKey, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1", DISABLE_TELEMETRY: "1", DISABLE_AUTOUPDATER: "1" },
    },
    codex: {
      args: [
        bins.codex, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
        "-c", "model_provider=router",
        "-c", `model_providers.router={name="router", base_url="${router.url}/v1", env_key="ROUTER_KEY", wire_api="responses"}`,
        // Codex offers OpenAI's hosted web search by default: a tool only OpenAI runs, which the router refuses to carry elsewhere.
        "-c", 'web_search="disabled"',
        "-m", model, PROMPT,
      ],
      env: { ROUTER_KEY: router.ownerKey, CODEX_HOME: join(home, ".codex") },
    },
    gemini: {
      args: [bins.gemini, "-p", PROMPT, "-m", model, "--output-format", "json"],
      env: { GEMINI_API_KEY: router.ownerKey, GOOGLE_GEMINI_BASE_URL: router.url, GEMINI_CLI_TRUST_WORKSPACE: "true", GEMINI_CLI_NO_RELAUNCH: "1" },
    },
  };
  mkdirSync(join(home, ".codex"), { recursive: true });
  const { args, env } = command[cli];
  const proc = Bun.spawn(args, { cwd: workspace, env: { ...base, ...env }, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const timer = setTimeout(() => proc.kill(), 90_000);
  const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  clearTimeout(timer);
  await proc.exited;
  const output = `exit ${proc.exitCode}\n--- stdout\n${stdout}\n--- stderr\n${stderr.slice(-4000)}`;
  switch (cli) {
    case "claude": return { answer: parseJson(stdout)?.result ?? "", output };
    case "gemini": return { answer: parseJson(stdout)?.response ?? "", output };
    case "codex": return { answer: stdout.trim(), output };
  }
}

function parseJson(text: string): any {
  try {
    return JSON.parse(text.slice(text.indexOf("{")));
  } catch {
    return undefined;
  }
}

const CASES: Array<[AgentCli, KeyFormat[]]> = [
  ["claude", ["openai", "responses", "gemini"]],
  ["codex", ["openai", "anthropic", "gemini"]],
  ["gemini", ["openai", "responses", "anthropic"]],
];

for (const [cli, formats] of CASES) {
  describe(cli, () => {
    for (const format of formats) {
      test(`runs a tool and answers through an upstream that speaks only ${format}`, async () => {
        const upstream = startAgentUpstream(format, scriptFor(cli));
        try {
          const current = ++level;
          await addKey(router, { provider: upstream.url, level: current, config: { provider_type: "standard", formats: [format] } });
          // Every model these CLIs ask for (main and side models alike) goes to this upstream.
          await router.deps.settings.update({ LEVEL_MAPPER: `*=${current}` });
          const before = (await usageRows(router)).length;
          const model = `acme-agent-${format}`;
          const { answer, output } = await runCli(cli, model);
          expect(answer, output).toContain(SECRET);
          expect(upstream.lastToolResult(), output).toContain(SECRET);
          const streamed = upstream.calls().filter((call) => (format === "gemini" ? call.path.endsWith(":streamGenerateContent") : call.json?.stream === true));
          expect(streamed.length, output).toBeGreaterThanOrEqual(2);
          // Metered on the upstream's own usage, like a native call: 130 in (100 cached), 20 out, per streamed call.
          const rows = await waitFor(async () => {
            const all = (await usageRows(router)).slice(before).filter((row) => row.prompt_tokens === CANNED_USAGE.input);
            return all.length >= 2 ? all : undefined;
          }, 5000, "usage rows of the streamed calls");
          for (const row of rows ?? []) {
            expect(row.completion_tokens).toBe(CANNED_USAGE.output);
            expect(row.cache_read_tokens).toBe(CANNED_USAGE.cached);
          }
        } finally {
          await upstream.stop();
        }
      }, 120_000);
    }
  });
}
