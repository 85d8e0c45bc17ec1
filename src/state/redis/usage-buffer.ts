import type { UsageBuffer } from "../../metering/usage-buffer.ts";
import type { Logger } from "../../core/log.ts";
import type { NewUsageEventRow } from "../../store/store.ts";
import type { RedisConnection } from "./connection.ts";
import { USAGE_APPEND, USAGE_CLAIM, USAGE_RELEASE, USAGE_REQUEUE } from "./lua-usage.ts";
import type { RedisState } from "./state.ts";
import { DEFAULT_PREFIX } from "./state.ts";
import { createSentRows } from "./sent-rows.ts";

/**
 * Rows this process sent in this long before the connection to Redis was lost are sent
 * again once it is made again, to be checked against the database: what a failover to a
 * replica that had not received them, or a crash with `appendfsync everysec`, can lose.
 */
export const RESEND_WINDOW_MS = 10_000;

/** Rows per RPUSH when sending again. */
const RESEND_CHUNK = 1000;

/**
 * The usage buffer on Redis: `usage:queue` (a list of JSON rows, oldest first), one
 * `usage:claim:<owner>` list per process writing a batch, and the `usage:claims` set of
 * those owners. A claim outlives its writer: when the writer's lease (the State's) has
 * expired, the next claim by any process takes it over and writes it, after checking
 * which of its rows the database already holds.
 *
 * A Redis that restarts without its data or fails over to a replica that lagged behind
 * can lose rows it acknowledged, or roll back claims so that rows already written are
 * queued again. So once the connection is made again, this process sends again the rows
 * Redis acknowledged in the last RESEND_WINDOW_MS before the connection was lost
 * (flagged `S`), and checks the rows it claims
 * against the database until one of its claims leaves the queue empty: a row is then
 * written once, and charged once, whichever way Redis lost track of it.
 */
export function createRedisUsageBuffer(options: { connection: RedisConnection; state: RedisState; prefix?: string; log?: Logger; resendWindowMs?: number }): UsageBuffer {
  const { connection: redis, state } = options;
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  const keys = { queue: `${prefix}usage:queue`, claims: `${prefix}usage:claims`, claimPrefix: `${prefix}usage:claim:` };
  const run = (script: typeof USAGE_CLAIM, payload: unknown) => redis.run(script, [], [`${prefix}lease:`, state.owner, String(state.leaseMs), JSON.stringify(payload)]);
  const sent = createSentRows(options.resendWindowMs ?? RESEND_WINDOW_MS);

  /** The connection count this process last reconciled with (0: never connected). */
  let seenConnects = 0;
  /**
   * The dataset generation (dataset.ts) this process last caught up with: the first check
   * makes it 1, a later one that finds the marker gone (Redis flushed, restarted) moves it on.
   */
  let seenGeneration = 1;
  /** Claims are checked against the database until one leaves the queue empty. */
  let checking = false;
  let reconciling: Promise<void> | undefined;
  const reconcile = async () => {
    const connects = redis.connects();
    if (seenConnects === 0) {
      seenConnects = connects;
      seenGeneration = Math.max(seenGeneration, state.dataset.latest());
      return;
    }
    const reconnected = connects !== seenConnects;
    // Forgotten only once sent: a failure leaves them for the next attempt.
    const again = sent.before(connects);
    if (again.length > 0) await state.dataset.check();
    const generation = state.dataset.latest();
    // Copies ('S'): their original, if Redis kept it, releases the charge. Rows sent before
    // Redis lost its data (a restart) go as copies whose charge is not held ('U'): it went
    // with that data, so written now they release nothing (found written, nothing either).
    const texts = again.map((row) => (row.generation !== 0 && row.generation !== generation ? `U${row.text}` : `S${row.text}`));
    // Redis can lose its data with the connection up (FLUSHALL, FLUSHDB): the rows sent
    // over this connection before are gone too, and no reconnection says so; the marker
    // (gone, so the generation moved on) does. Before, a flush lost the rows waiting then.
    const lost = generation > seenGeneration ? sent.ofEarlierGeneration(generation, connects) : [];
    for (const text of lost) texts.push(`U${text}`);
    for (let start = 0; start < texts.length; start += RESEND_CHUNK) {
      await redis.send("RPUSH", [keys.queue, ...texts.slice(start, start + RESEND_CHUNK)]);
    }
    sent.forget(connects);
    if (lost.length > 0) sent.forgetEarlierGeneration(generation, connects);
    // The copies are rows the new connection acknowledged: a second loss soon after (a
    // failover, then a restart) can lose them too, so they are kept as sent on it.
    const now = Date.now();
    for (const text of [...again.map((row) => row.text), ...lost]) sent.add(text, now, redis.connects(), generation);
    seenConnects = connects;
    seenGeneration = Math.max(seenGeneration, generation);
    checking = true;
    const what = reconnected ? "the connection to Redis was made again" : "Redis no longer holds what this process stored there (flushed)";
    options.log?.warn(`${what}: recent usage rows are queued again and claimed rows are checked against the database`, { rows: texts.length });
  };
  /** Resolves once this process caught up with a new connection or dataset; undefined (no promise) when there is none. */
  const reconciled = (): Promise<void> | undefined => {
    if (redis.connects() === seenConnects && state.dataset.latest() <= seenGeneration && !reconciling) return undefined;
    return (reconciling ??= reconcile().finally(() => (reconciling = undefined)));
  };
  /**
   * A script refused because this process's marker is gone (the dataset it last checked
   * was lost): checked again, which moves the generation on, and caught up with.
   */
  const afterLoss = async () => {
    await state.dataset.check();
    await reconciled();
  };
  /**
   * Catches up at once when the command just made the connection again: waiting for
   * this process's next call left the rows Redis lost unsent meanwhile, and for good
   * when that call never came (a process stopping: its flush's claim was its last).
   */
  const catchUpAfter = (): Promise<void> | undefined => (redis.connects() === seenConnects ? undefined : reconciled());

  /** Rows already reported as unreadable (bounded): each is logged once, not at every claim that meets it again. */
  const reported = new Set<string>();
  /** Queues the rows again; true when that ended the claim (nothing readable was in it). */
  const setAside = async (texts: string[]): Promise<boolean> => {
    const [, ended] = (await run(USAGE_REQUEUE, { ...keys, rows: texts })) as [number, number];
    const fresh = texts.filter((text) => !reported.has(text));
    if (fresh.length === 0) return ended === 1;
    if (reported.size > 10_000) reported.clear();
    for (const text of fresh) reported.add(text);
    options.log?.warn("usage rows in Redis in a form this router cannot read (from a newer router?) were queued again for an instance that can write them", { rows: fresh.length });
    return ended === 1;
  };

  return {
    async append(row, flag, storedBy) {
      const catchingUp = reconciled();
      if (catchingUp) await catchingUp;
      // After the settlement that counted the row's charge as unwritten (gathered for up to
      // a few ms): a row written and announced before it left that charge counted for good.
      const settling = state.settlementsApplied();
      if (settling) await settling;
      // Each row is sent in a known generation of Redis's data (dataset.ts): the first one checks it.
      if (state.dataset.latest() === 0) await state.dataset.check().catch(() => {});
      // An unsure row carries the id of the writer that may have stored it (a property a claim takes off).
      const text = JSON.stringify(flag === "unsure" && storedBy !== undefined ? { ...row, storedBy } : row);
      // Flagged as a claim reads them: 'S' a copy, 'R' a row to check (as one handed back).
      // Appended with its charge handed over from this process (USAGE_APPEND): killed
      // between its settlement and here, the charge would have stayed held for good.
      const queued = flag === "copy" ? `S${text}` : flag === "unsure" ? `R${text}` : text;
      // Appended only while the marker of the generation noted with it is there: a row that
      // generation's loss took is then among those sent again, and no other is.
      let generation = state.dataset.latest();
      const append = () => run(USAGE_APPEND, { queue: keys.queue, row: queued, key: `${prefix}c:${row.accountId}`, amount: row.costNanos ?? 0, marker: generation === 0 ? undefined : state.dataset.key });
      for (let attempt = 0; (await append()) === 0; attempt++) {
        if (attempt === 2) throw new Error("Redis lost this process's dataset marker again and again: the usage row was not appended");
        await afterLoss();
        generation = state.dataset.latest();
      }
      sent.add(text, Date.now(), redis.connects(), generation);
      // The row is in Redis: a failure to catch up must not hand it back (it would be written twice); the next call tries again.
      await catchUpAfter()?.catch(() => {});
    },
    async claim(max) {
      const catchingUp = reconciled();
      if (catchingUp) await catchingUp;
      // With the marker (when known): a claim from a Redis that lost this process's rows waits for them to be queued again.
      const claimNow = async () => (await run(USAGE_CLAIM, { ...keys, max, marker: state.dataset.latest() === 0 ? undefined : state.dataset.key })) as string[];
      let answer = await claimNow();
      if (answer[0] === "lost") {
        await afterLoss();
        answer = await claimNow();
        if (answer[0] === "lost") return { rows: [], waiting: 0, elsewhere: 0, claim: undefined, retry: false };
      }
      let [kind, waiting, elsewhere, ...texts] = answer;
      // A claim that itself made the connection again read a Redis this process had not caught up with yet.
      const reconnected = redis.connects() !== seenConnects;
      if (reconnected) {
        // (A failure leaves what was claimed in this process's claim: the next claim hands it back.)
        await catchUpAfter();
        // Nothing was waiting on the new Redis: the copies just sent are this claim's.
        if (texts.length === 0) [kind, waiting, elsewhere, ...texts] = await claimNow();
      }
      // A claim's id leads its rows (none on a claim an older router made).
      const claim = texts[0]?.startsWith("#") ? texts.shift() : undefined;
      const retried = kind === "retry" || checking || reconnected;
      if (checking && !reconnected && Number(waiting) === 0) checking = false;
      const rows: ClaimedRow[] = [];
      const unreadable: string[] = [];
      for (const text of texts) {
        const row = readRow(text, retried);
        if (row) rows.push(row);
        else unreadable.push(text);
      }
      // A claim of unreadable rows alone is ended by setAside: there is nothing to write under it.
      const ended = unreadable.length > 0 && (await setAside(unreadable));
      return { rows, waiting: Number(waiting), elsewhere: Number(elsewhere), claim: ended ? undefined : claim, retry: kind === "retry" };
    },
    done: (charged, version) => state.flushedClaim(charged, version, [keys.claimPrefix + state.owner, keys.claims]),
    async release() {
      await run(USAGE_RELEASE, keys);
    },
  };
}

type ClaimedRow = NewUsageEventRow & { retried?: boolean; copy?: boolean; unheld?: boolean; storedBy?: string };

/**
 * A claimed row's text as a row, or undefined when this version cannot read it (another
 * version's flag or encoding, or a row without the fields a usage row cannot be stored
 * without): written as it reads, it would fail its whole batch again and again.
 */
function readRow(text: string, retried: boolean): ClaimedRow | undefined {
  // A row handed back by a stopping process carries an 'R' before its JSON; one sent
  // again after a reconnection, an 'S' (a copy handed back was once flagged 'RS'), or
  // a 'U' after Redis lost its data (a copy whose charge is not held).
  let start = 0;
  let copy = false;
  let unheld = false;
  for (let flag = text[start]; flag === "R" || flag === "S" || flag === "U"; flag = text[++start]) {
    if (flag !== "R") copy = true;
    if (flag === "U") unheld = true;
  }
  let row: ClaimedRow;
  try {
    row = JSON.parse(start > 0 ? text.slice(start) : text) as ClaimedRow;
  } catch {
    return undefined;
  }
  if (!isRow(row)) return undefined;
  if (retried || start > 0) row.retried = true;
  // A row handed back by the process that may have stored it as a copy ('R' with its writer's id) is a copy.
  if (copy || typeof row.storedBy === "string") row.copy = true;
  if (unheld) row.unheld = true;
  return row;
}

/** The fields `usage_events` cannot store a row without, of the types this version writes. */
function isRow(row: unknown): row is ClaimedRow {
  if (typeof row !== "object" || row === null || Array.isArray(row)) return false;
  const r = row as Record<string, unknown>;
  const strings = ["requestId", "day", "endpoint", "source"].every((field) => typeof r[field] === "string");
  const numbers = ["accountId", "createdAt", "status", "latencyMs"].every((field) => Number.isFinite(r[field]));
  return strings && numbers;
}
