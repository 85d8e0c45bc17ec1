/**
 * `bun scripts/redis-admit-lab.ts [--runs N]`: what one admission costs Redis, without the
 * rest of a scale-out run. Starts a throwaway redis-server (it must be installed), makes an
 * admission as the router makes the benchmark account's (scripts/bench/router.ts: credit;
 * its own and its owner's day and month spend with their gauges, limited for the account
 * only; `planWindows` over the real limit subjects of its six limits, its ModelLimits and
 * MODEL_LIMITS, none of which refuses), gives its windows an hour of
 * history (so each walk ends where it does in a long-running deployment), then admits N
 * times 20 ms apart and prints Redis's own figures (`INFO commandstats`): the script's
 * time per run and the commands run inside it. A change to the Redis State's scripts
 * (src/state/redis/lua*.ts) can be measured here in seconds; docs/benchmarks.md says
 * what the figures were.
 */
import { startRedisServer } from "../test/helpers/redis-server.ts";
import { connectRedis } from "../src/state/redis/connection.ts";
import { createRedisState } from "../src/state/redis/state.ts";
import { createPeriodCounters } from "../src/metering/quotas.ts";
import { limitSubjects, planWindows, type RefusalReason, type SystemLimits } from "../src/metering/limits.ts";
import { compilePattern } from "../src/routing/patterns.ts";
import type { AccountRow } from "../src/store/store.ts";
import type { AdmitLine } from "../src/state/state.ts";
import type { Clock } from "../src/core/clock.ts";

const runs = Number(process.argv[process.argv.indexOf("--runs") + 1]) || 3000;
const server = await startRedisServer();
const connection = connectRedis(server.url);
let now = Date.UTC(2026, 10, 28, 9);
const state = createRedisState({ connection, prefix: "lab:" }, { seed: () => 0, balance: () => ({ balance: 1e18, staleAt: Infinity, version: 1 }) }, () => now);

// The benchmark's account and its owner (scripts/bench/router.ts): limits set high enough never to refuse.
const account = { id: 7, path: "/1/7/", rpm: 1e8, rph: 1e9, rpd: 1e9, tpm: 1e12, tph: 1e12, tpd: 1e12, modelLimits: JSON.stringify({ "bench-*": { rpm: 1e8, tpm: 1e12 } }) } as unknown as AccountRow;
const system: SystemLimits = [{ pattern: compilePattern("bench-*"), limits: { rpm: 1e8, tpm: 1e12 } }];
const periods = createPeriodCounters();
const clock = { now: () => now } as unknown as Clock;
const spenders = [
  { root: { id: 7, path: "/1/7/" }, limit: 9e14, inFlight: { kind: "gauge", key: "spend:7:reserved" } as const },
  { root: { id: 1, path: "/1/" }, limit: undefined, inFlight: { kind: "gauge", key: "spend:1:reserved" } as const },
];

function admission(at: number): AdmitLine[] {
  const day = new Date(at).toISOString().slice(0, 10);
  const reserve = 5_000;
  const lines: AdmitLine[] = [{ counter: { kind: "credit", accountId: 7 }, limit: 0, add: reserve }];
  for (const { root, limit, inFlight } of spenders) {
    lines.push({ counter: periods.subtree("spent", "day", root), period: day, limit, add: reserve, held: inFlight });
    lines.push({ counter: periods.subtree("spent", "month", root), period: day.slice(0, 7), limit, add: reserve, held: inFlight });
    lines.push({ counter: inFlight, add: reserve });
  }
  const reasons: Array<RefusalReason | undefined> = [];
  planWindows({ subjects: limitSubjects(account, "bench-model", periods, system), day, now: at, tokens: 4_000, clock }, lines, reasons);
  return lines;
}

const admit = async () => {
  const verdict = await state.counts.admit(admission(now), now);
  if (!verdict.admitted) throw new Error(`refused: ${JSON.stringify(verdict.refusal)}`);
};
try {
  // An hour and a minute of history, then the measured admissions.
  for (let i = 0; i < 7_400; i++, now += 500) await admit();
  await connection.send("CONFIG", ["RESETSTAT"]);
  const started = performance.now();
  for (let i = 0; i < runs; i++, now += 20) await admit();
  const wall = ((performance.now() - started) * 1000) / runs;
  const stats = String(await connection.send("INFO", ["commandstats"]))
    .split("\n")
    .map((line) => /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line.trim()))
    .filter((match): match is RegExpExecArray => match !== null && match[1] !== "config|resetstat" && match[1] !== "info");
  const lines = admission(now);
  console.log(`${lines.length} lines (${lines.filter((line) => line.limit !== undefined).length} with a limit), ${runs} admissions, ${wall.toFixed(0)} µs each as the client waits`);
  stats.sort((a, b) => Number(b[3]) - Number(a[3]));
  for (const [, name, calls, usec] of stats) {
    const perRun = Number(calls) / runs;
    console.log(`  ${name!.padEnd(14)} ${perRun.toFixed(2).padStart(6)} per admission, ${(Number(usec) / Number(calls)).toFixed(2).padStart(7)} µs each`);
  }
} finally {
  state.close();
  connection.close();
  await server.close();
}
