import { script } from "./connection.ts";
import { PRELUDE } from "./lua.ts";

/* The Lua scripts of the usage rows waiting in Redis for the database (conventions in lua.ts). */

/**
 * Usage rows waiting for the database (a list of JSON rows, oldest first) and what each
 * process claimed of them to write (its own list, its owner id in the claims set).
 * P = {queue, claims, claimPrefix, max}. Answers {kind, waiting, id, row…}: 'retry' with the
 * rows of an unfinished claim (this process's own, or one a dead process left: its lease
 * expired), which may be in the database already; 'new' with up to max rows moved from
 * the queue to this process's claim; 'none' when nothing waits. `waiting` is the queue's
 * length after the claim; the answer's third element, `elsewhere`, the rows other
 * processes' claims hold (written by nobody yet, as far as Redis knows): the bound on rows
 * waiting counts every instance's, not only the queue's (other instances claim from it). A process that holds a claim renews its lease here: after a
 * Redis restart its lease key is gone until its next heartbeat (a third of the lease),
 * and meanwhile another process would take over a claim its living writer is writing.
 * A claim's id (`#<Redis time>.<n>`, n from a counter beside the queue) is its list's first element:
 * whoever writes the claim, its writer or another after it died, notes under it what
 * the write released (`usage_claim_writes`), and a retry finds that note.
 * P.marker, when given, is this process's dataset marker (dataset.ts): when Redis no
 * longer holds it (flushed, restarted) the answer is {'lost'} and nothing is claimed, so
 * the process first queues again the rows it sent before (USAGE_APPEND does the same).
 */
export const USAGE_CLAIM = script(`${PRELUDE}
if P.marker ~= nil and redis.call('EXISTS', P.marker) == 0 then return { 'lost', 0, 0 } end
local mine = P.claimPrefix .. OWNER
-- Rows of the other processes' claims (a claim's id, its first element, is not a row).
local function elsewhere()
  local rows = 0
  for _, other in ipairs(redis.call('SMEMBERS', P.claims)) do
    if other ~= OWNER then
      local list = P.claimPrefix .. other
      local length = redis.call('LLEN', list)
      if length > 0 and string.sub(redis.call('LINDEX', list, 0), 1, 1) == '#' then length = length - 1 end
      rows = rows + length
    end
  end
  return rows
end
local held = redis.call('LRANGE', mine, 0, -1)
if #held > 0 then
  touch()
  return { 'retry', redis.call('LLEN', P.queue), elsewhere(), unpack(held) }
end
for _, other in ipairs(redis.call('SMEMBERS', P.claims)) do
  if other ~= OWNER and not alive(other) then
    redis.call('SREM', P.claims, other)
    local theirs = P.claimPrefix .. other
    if redis.call('EXISTS', theirs) == 1 then
      redis.call('RENAME', theirs, mine)
      redis.call('SADD', P.claims, OWNER)
      touch()
      return { 'retry', redis.call('LLEN', P.queue), elsewhere(), unpack(redis.call('LRANGE', mine, 0, -1)) }
    end
  end
end
local rows = redis.call('LRANGE', P.queue, 0, P.max - 1)
if #rows == 0 then return { 'none', 0, elsewhere() } end
redis.call('LTRIM', P.queue, #rows, -1)
-- Redis's time keeps ids apart across a restart that lost the counter.
local now = redis.call('TIME')
local id = '#' .. now[1] .. '.' .. now[2] .. '.' .. redis.call('INCR', P.queue .. ':claims')
redis.call('RPUSH', mine, id, unpack(rows))
redis.call('SADD', P.claims, OWNER)
touch()
return { 'new', redis.call('LLEN', P.queue), elsewhere(), id, unpack(rows) }
`);

/**
 * A process that stops hands its unfinished claim back: P = {queue, claims, claimPrefix}.
 * The rows go back to the head of the queue in their order, flagged (an 'R' before the
 * JSON) for the check a retried claim gets (the database may hold them already), so another process writes
 * them at once instead of after this one's lease expired.
 */
export const USAGE_RELEASE = script(`${PRELUDE}
local mine = P.claimPrefix .. OWNER
local rows = redis.call('LRANGE', mine, 0, -1)
-- 'R' before a row flags it (rows are JSON objects, so they start with '{'); a row flagged
-- already (a copy, 'S', is checked by whoever claims it) keeps its flag.
for i = #rows, 1, -1 do
  local row = rows[i]
  local first = string.sub(row, 1, 1)
  if first ~= '#' then
    if first == '{' then row = 'R' .. row end
    redis.call('LPUSH', P.queue, row)
  end
end
redis.call('DEL', mine)
redis.call('SREM', P.claims, OWNER)
return #rows
`);

/**
 * A settled call's usage row joins the queue, P = {queue, row, key, amount}: its charge
 * (amount on the credit hash key) stops being this process's own (q<owner>, lua.ts) in
 * the same step, so a process killed before appending leaves no charge held for good, and
 * one killed after leaves it to whoever writes the row. Lowered more than it was raised
 * (a row appended twice, as a copy) it only ever holds less: the charges a dead process
 * drops are never ones whose rows wait. Answers 0, appending nothing, when P.marker is
 * given and gone (see USAGE_CLAIM): a row is never appended to a dataset the process has
 * not checked, so the generation it is noted in says whether Redis may have lost it.
 */
export const USAGE_APPEND = script(`${PRELUDE}
if P.marker ~= nil and redis.call('EXISTS', P.marker) == 0 then return 0 end
redis.call('RPUSH', P.queue, P.row)
if P.key ~= nil and P.amount > 0 then
  local field = 'q' .. OWNER
  local q = num(redis.call('HGET', P.key, field))
  if q ~= nil then
    if q - P.amount > 0 then redis.call('HSET', P.key, field, str(q - P.amount)) else redis.call('HDEL', P.key, field) end
  end
end
return 1
`);

/**
 * Rows of this process's claim it cannot read (another version's form, during a rolling
 * upgrade) go back to the tail of the queue, P = {queue, claimPrefix, rows}: taken out of
 * the claim and queued again in one step, so they are neither dropped with the claim
 * once the rest is written, nor queued twice if this process dies meanwhile, nor left to
 * hold up the rows claimed with them. An instance that reads them writes them. A claim
 * left with its id alone ends (P.claims): kept, it would be retried for ever, and this
 * process would never claim again.
 */
export const USAGE_REQUEUE = script(`${PRELUDE}
local mine = P.claimPrefix .. OWNER
local moved = 0
for _, row in ipairs(P.rows) do
  if redis.call('LREM', mine, 1, row) == 1 then
    redis.call('RPUSH', P.queue, row)
    moved = moved + 1
  end
end
local left = redis.call('LRANGE', mine, 0, 1)
if #left == 0 or (#left == 1 and string.sub(left[1], 1, 1) == '#') then
  redis.call('DEL', mine)
  redis.call('SREM', P.claims, OWNER)
  return { moved, 1 }
end
return { moved, 0 }
`);
