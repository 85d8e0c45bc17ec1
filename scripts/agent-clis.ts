/**
 * The agent CLIs the translation tests drive (Claude Code, Codex, Gemini CLI), installed
 * on demand into `.agent-clis/` at pinned versions. They are not devDependencies: together
 * they weigh about 750 MB, which `npm install && npm start` should not cost a newcomer.
 * Run by the tests that need them (and callable by hand: `bun scripts/agent-clis.ts`).
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

export const AGENT_CLIS = {
  claude: { pkg: "@anthropic-ai/claude-code", version: "2.1.197" },
  codex: { pkg: "@openai/codex", version: "0.171.0" },
  gemini: { pkg: "@google/gemini-cli", version: "0.61.0" },
} as const;
export type AgentCli = keyof typeof AGENT_CLIS;

export const AGENT_CLI_DIR = resolve(import.meta.dir, "..", ".agent-clis");

const installedVersion = (pkg: string): string | undefined => {
  const manifest = join(AGENT_CLI_DIR, "node_modules", pkg, "package.json");
  return existsSync(manifest) ? (JSON.parse(readFileSync(manifest, "utf8")) as { version: string }).version : undefined;
};

/** The path of each CLI's executable, installing any that is missing or at another version. */
export async function ensureAgentClis(): Promise<Record<AgentCli, string>> {
  const all = Object.values(AGENT_CLIS);
  if (all.some(({ pkg, version }) => installedVersion(pkg) !== version)) {
    mkdirSync(AGENT_CLI_DIR, { recursive: true });
    // All at once: an install without a manifest removes what an earlier one put there.
    const specs = all.map(({ pkg, version }) => `${pkg}@${version}`);
    const npm = Bun.spawn(["npm", "install", "--prefix", AGENT_CLI_DIR, "--no-save", "--no-audit", "--no-fund", "--loglevel=error", ...specs], { stdout: "pipe", stderr: "pipe" });
    const [code, err] = await Promise.all([npm.exited, new Response(npm.stderr).text()]);
    if (code !== 0) throw new Error(`installing ${specs.join(", ")} failed (npm exit ${code}): ${err.slice(-2000)}`);
  }
  const bin = (name: string) => join(AGENT_CLI_DIR, "node_modules", ".bin", name);
  return { claude: bin("claude"), codex: bin("codex"), gemini: bin("gemini") };
}

if (import.meta.main) {
  const paths = await ensureAgentClis();
  for (const [name, path] of Object.entries(paths)) console.log(`${name}: ${path}`);
}
