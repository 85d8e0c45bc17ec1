import type { Logger } from "../../core/log.ts";
import { SHARED_GENERATION, VERSION } from "../../version.ts";
import { connectRedis, script, type RedisConnection } from "./connection.ts";

/**
 * Which versions run on a deployment's Redis: every instance keeps its version and
 * shared-form generation (version.ts) in one hash, `versions`, under its owner id,
 * written with each heartbeat and removed on a clean stop; an entry counts while that
 * owner's lease lives (a killed instance's goes with its lease, within 30 s).
 */
export const VERSIONS_KEY = "versions";
/**
 * The newest generation that ever ran on this Redis (`<generation> <version>`): its data
 * (usage rows waiting, counters, credit) may be in forms an older one cannot read, even
 * once no instance of it runs (a downgrade).
 */
export const GENERATION_KEY = "generation";

/** This instance's entry: `<generation> <version>`. */
export const presence = (): string => `${SHARED_GENERATION} ${VERSION}`;

/**
 * Answers {newest, live…}: the generation marker when it is newer than ARGV[5] (else ''),
 * then the entries of live instances; those whose lease ended are removed on the way.
 * With ARGV[2..4] (owner, entry, lease ms), nothing newer and none of another generation
 * live, the starting instance enters itself, takes its lease and raises the marker to its
 * generation in the same step: two instances of different generations starting at once
 * cannot both pass (the heartbeat came only after the migrations).
 */
const LIVE_VERSIONS = script(`
local mine = tonumber(ARGV[5])
local marker = redis.call('GET', KEYS[2])
local newest = ''
if marker and (tonumber(string.match(marker, '^%S+')) or mine + 1) > mine then newest = marker end
local answer = { newest }
local other = newest ~= ''
local entries = redis.call('HGETALL', KEYS[1])
for i = 1, #entries, 2 do
  if redis.call('EXISTS', ARGV[1] .. entries[i]) == 1 then
    table.insert(answer, entries[i + 1])
    if string.match(entries[i + 1], '^%S+') ~= ARGV[5] then other = true end
  else redis.call('HDEL', KEYS[1], entries[i]) end
end
if ARGV[2] ~= '' and not other then
  redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
  redis.call('SET', ARGV[1] .. ARGV[2], '1', 'PX', ARGV[4])
  if not marker or tonumber(string.match(marker, '^%S+')) ~= mine then redis.call('SET', KEYS[2], ARGV[3]) end
end
return answer
`);

/**
 * Refuses to start beside live instances of another generation, or after a newer one
 * ran on this Redis: run together, one would misread what the other writes in Redis
 * (counters, credit, usage rows waiting), or write rows the other's schema no longer
 * takes. Checked before this instance migrates or writes anything. A Redis that does not
 * answer now is no reason not to start (the instance serves 503s until it does): the
 * check is then skipped, with a warning.
 */
export async function refuseOtherGenerations(
  url: string,
  log: Pick<Logger, "warn">,
  /** The starting instance's owner id and lease (its State's), entered when the check passes; none for `router migrate`. */
  self?: { owner: string; leaseMs: number },
  prefix = "router:" /* DEFAULT_PREFIX: state.ts imports this module */,
): Promise<void> {
  let redis: RedisConnection | undefined;
  let answer: string[];
  try {
    redis = connectRedis(url);
    const args = [`${prefix}lease:`, self?.owner ?? "", presence(), String(self?.leaseMs ?? 0), String(SHARED_GENERATION)];
    answer = (await redis.run(LIVE_VERSIONS, [`${prefix}${VERSIONS_KEY}`, `${prefix}${GENERATION_KEY}`], args)) as string[];
  } catch (error) {
    // The connection's errors never hold the URL (connection.ts), so never its password.
    log.warn("Redis did not answer: the versions of the instances already running could not be checked", { error: (error as Error).message });
    return;
  } finally {
    redis?.close();
  }
  const [newest, ...live] = answer;
  if (newest) {
    const [generation, version] = newest.split(" ");
    throw new Error(
      `router ${version ?? "(unknown)"} ran on this Redis and keeps data there in a form router ${VERSION} cannot read ` +
        `(generation ${generation}, this one ${SHARED_GENERATION}); run router ${version ?? "of that generation"} or newer`,
    );
  }
  for (const entry of live) {
    const [generation, version] = entry.split(" ");
    if (Number(generation) === SHARED_GENERATION) continue;
    throw new Error(
      `an instance of router ${version ?? "(unknown)"} runs on this Redis, and router ${VERSION} cannot run beside it ` +
        `(they keep shared data in different forms: generation ${generation}, this one ${SHARED_GENERATION}); ` +
        `stop every instance of router ${version ?? "(unknown)"} first (one killed rather than stopped counts for 30 s more), then start this version`,
    );
  }
}
