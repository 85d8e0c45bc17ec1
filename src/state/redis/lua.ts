import { script } from "./connection.ts";

/**
 * The Lua scripts of the Redis State. Redis runs each script to its end before any other
 * command, so a script is the unit of atomicity: an admission's check and counting, a
 * settlement, a key's verdict. Numbers travel as strings written with `%.17g` (exact for
 * the integers a double holds; Lua's own `tostring` keeps only 14 digits, and a number
 * returned from a script is cut to an integer by Redis).
 *
 * Every script takes the same first arguments: ARGV[1] the prefix of lease keys, ARGV[2]
 * this process's owner id, ARGV[3] the lease's length in ms, ARGV[4] a JSON payload.
 */
const PRELUDE = `
local LEASES, OWNER, LEASE_MS = ARGV[1], ARGV[2], tonumber(ARGV[3])
local P = cjson.decode(ARGV[4])
local function str(x) return string.format('%.17g', x) end
local function num(x) if x == false or x == nil or x == '' then return nil end return tonumber(x) end

-- Leases: what a process holds (reservations, calls in flight, probes) is kept under its
-- owner id and counts only while that owner's lease key lives.
local living = {}
local function alive(owner)
  if owner == OWNER then return true end
  local known = living[owner]
  if known == nil then known = redis.call('EXISTS', LEASES .. owner) == 1; living[owner] = known end
  return known
end
local function touch() redis.call('SET', LEASES .. OWNER, '1', 'PX', LEASE_MS) end

-- Gauges: a hash of owner -> amount; the value is the sum over living owners.
local function gauge_sum(key)
  local all = redis.call('HGETALL', key)
  local total = 0
  for i = 1, #all, 2 do
    if alive(all[i]) then total = total + tonumber(all[i + 1]) else redis.call('HDEL', key, all[i]) end
  end
  return total
end
local function gauge_add(key, delta)
  local v = (num(redis.call('HGET', key, OWNER)) or 0) + delta
  if v < 0 then v = 0 end
  redis.call('HSET', key, OWNER, str(v))
end

-- Sliding windows, as memory-windows.ts: buckets of windowMs/60 (fields a<start> amount,
-- l<start> newest event), the 61 up to the newest (h); a bucket counts while its newest
-- event is less than a window old. The window's length is kept (ms): another length
-- starts a new series, as in memory.
local function width_of(ms) return math.max(1, math.ceil(ms / 60)) end
local function window_fields(key, ms)
  local all = redis.call('HGETALL', key)
  local h = {}
  for i = 1, #all, 2 do h[all[i]] = all[i + 1] end
  if h.ms ~= nil and tonumber(h.ms) ~= ms then return nil end
  return h
end
local function window_live(key, ms, now)
  local h = window_fields(key, ms)
  local live = {}
  if h == nil then return live end
  for field, amount in pairs(h) do
    if string.sub(field, 1, 1) == 'a' then
      local start = tonumber(string.sub(field, 2))
      local latest = num(h['l' .. string.sub(field, 2)])
      if latest ~= nil and start <= now and latest > now - ms then live[#live + 1] = { latest, tonumber(amount) } end
    end
  end
  return live
end
local function window_sum(key, ms, now)
  local total = 0
  for _, b in ipairs(window_live(key, ms, now)) do total = total + b[2] end
  return total
end
local function window_retry(key, ms, now, limit)
  local live = window_live(key, ms, now)
  local total = 0
  for _, b in ipairs(live) do total = total + b[2] end
  if total < limit then return 0 end
  table.sort(live, function(x, y) return x[1] < y[1] end)
  for _, b in ipairs(live) do
    total = total - b[2]
    if total < limit then return math.max(0, b[1] + ms - now) end
  end
  return ms
end
local function window_add(key, ms, amount, at)
  local width = width_of(ms)
  local start = math.floor(at / width) * width
  local h = window_fields(key, ms)
  if h == nil then redis.call('DEL', key); h = {} end
  local head = num(h.h)
  if head == nil or start > head then
    head = start
    local oldest = head - 60 * width
    for field, _ in pairs(h) do
      local c = string.sub(field, 1, 1)
      if (c == 'a' or c == 'l') and tonumber(string.sub(field, 2)) < oldest then redis.call('HDEL', key, field) end
    end
    redis.call('HSET', key, 'h', str(head), 'ms', str(ms))
  end
  -- Older than the ring (a clock step back, a reservation made over a window ago): it could not count any more.
  if start < head - 60 * width then return end
  local name = string.format('%.0f', start)
  redis.call('HSET', key, 'a' .. name, str((num(h['a' .. name]) or 0) + amount))
  if amount > 0 and at > (num(h['l' .. name]) or -math.huge) then redis.call('HSET', key, 'l' .. name, str(at)) end
  redis.call('PEXPIRE', key, 2 * ms + 1000)
end

-- Credit: a hash of stored (ledger balance when read, less charges written since),
-- staleAt (empty: never), unflushed (charges not written yet) and r<owner> (reservations).
local function credit_reserved(key)
  local all = redis.call('HGETALL', key)
  local total = 0
  for i = 1, #all, 2 do
    local field = all[i]
    if string.sub(field, 1, 1) == 'r' then
      if alive(string.sub(field, 2)) then total = total + tonumber(all[i + 1]) else redis.call('HDEL', key, field) end
    end
  end
  return total
end
local function credit_value(key)
  local f = redis.call('HMGET', key, 'stored', 'unflushed')
  return (num(f[1]) or 0) - (num(f[2]) or 0) - credit_reserved(key)
end
`;

/**
 * Admission (and reads): P is a list of lines {k: w|p|g|c, key, w (window ms), p (period),
 * l (limit), a (add), h (held gauge key), s (seed), b (balance), st (stale at)}. First the
 * lines whose period total or balance Redis does not hold are either filled from what the
 * caller loaded (s, b) or named in a {'load', i…} answer; then, in mode 'admit', every
 * limit is checked and, when none is reached, every amount added: {'ok'} or
 * {'no', line, used, held, retryAfterMs}; in mode 'read', the first line's value.
 */
export const ADMIT = script(`${PRELUDE}
local MODE, NOW, PERIOD_TTL = ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7])
local missing = {}
for i, line in ipairs(P) do
  if line.k == 'p' then
    if redis.call('HGET', line.key, 'day') ~= line.p then
      if line.s ~= nil then
        redis.call('HSET', line.key, 'day', line.p, 'value', str(line.s))
        redis.call('PEXPIRE', line.key, PERIOD_TTL)
      else missing[#missing + 1] = tostring(i - 1) end
    end
  elseif line.k == 'c' then
    local f = redis.call('HMGET', line.key, 'stored', 'staleAt')
    local stale = num(f[2])
    if f[1] == false or (stale ~= nil and NOW >= stale) then
      if line.b ~= nil then
        redis.call('HSET', line.key, 'stored', str(line.b), 'staleAt', line.st and str(line.st) or '')
      else missing[#missing + 1] = tostring(i - 1) end
    end
  end
end
if #missing > 0 then return { 'load', unpack(missing) } end

local function value(line)
  if line.k == 'w' then return window_sum(line.key, line.w, NOW)
  elseif line.k == 'p' then
    local f = redis.call('HMGET', line.key, 'day', 'value')
    if f[1] == line.p then return num(f[2]) or 0 end
    return 0
  elseif line.k == 'g' then return gauge_sum(line.key)
  else return credit_value(line.key) end
end

if MODE == 'read' then return { 'value', str(value(P[1])) } end

for i, line in ipairs(P) do
  if line.l ~= nil then
    local used = value(line)
    local reached
    if line.k == 'c' then reached = used <= line.l else reached = used >= line.l end
    if reached then
      local held, retry = 0, 0
      if line.k == 'c' then held = credit_reserved(line.key) elseif line.h ~= nil then held = gauge_sum(line.h) end
      if line.k == 'w' then retry = window_retry(line.key, line.w, NOW, line.l) end
      return { 'no', tostring(i - 1), str(used), str(held), str(retry) }
    end
  end
end

touch()
for _, line in ipairs(P) do
  if line.a ~= 0 then
    if line.k == 'w' then window_add(line.key, line.w, line.a, NOW)
    elseif line.k == 'p' then
      local f = redis.call('HMGET', line.key, 'day', 'value')
      if f[1] == line.p then redis.call('HSET', line.key, 'value', str((num(f[2]) or 0) + line.a)) end
    elseif line.k == 'g' then gauge_add(line.key, line.a)
    else
      local field = 'r' .. OWNER
      redis.call('HSET', line.key, field, str((num(redis.call('HGET', line.key, field)) or 0) + line.a))
    end
  end
end
return { 'ok' }
`);

/**
 * Settlement: P is a list of changes {k: w, key, w, at, d} | {k: p, key, p, d, s} |
 * {k: g, key, d} | {k: c, key, rel, ch}. A period change moving to a newer period than
 * Redis holds needs its seed first ({'load', i…}); a change to an older one is dropped.
 */
export const ADJUST = script(`${PRELUDE}
local PERIOD_TTL = tonumber(ARGV[5])
local missing = {}
for i, c in ipairs(P) do
  if c.k == 'p' and c.d ~= 0 then
    local day = redis.call('HGET', c.key, 'day')
    if day ~= c.p and not (day ~= false and day > c.p) then
      if c.s ~= nil then
        redis.call('HSET', c.key, 'day', c.p, 'value', str(c.s))
        redis.call('PEXPIRE', c.key, PERIOD_TTL)
      else missing[#missing + 1] = tostring(i - 1) end
    end
  end
end
if #missing > 0 then return { 'load', unpack(missing) } end
touch()
for _, c in ipairs(P) do
  if c.k == 'w' then
    if c.d ~= 0 then window_add(c.key, c.w, c.d, c.at) end
  elseif c.k == 'p' then
    local f = redis.call('HMGET', c.key, 'day', 'value')
    if c.d ~= 0 and f[1] == c.p then redis.call('HSET', c.key, 'value', str((num(f[2]) or 0) + c.d)) end
  elseif c.k == 'g' then gauge_add(c.key, c.d)
  else
    local field = 'r' .. OWNER
    local f = redis.call('HMGET', c.key, field, 'unflushed')
    local reserved = (num(f[1]) or 0) - c.rel
    if reserved < 0 then reserved = 0 end
    redis.call('HSET', c.key, field, str(reserved), 'unflushed', str((num(f[2]) or 0) + c.ch))
  end
end
return { 'ok' }
`);

/**
 * Credit outside admission: P = {op: 'held', key} | {op: 'flushed', charges: [[key, amount]…],
 * drop?: [claim list, claims set]}. With drop, the drained claim of usage rows whose charges
 * these are goes in the same step: a process dying in between can neither leave the charges
 * counted as unwritten for good nor have them written off twice.
 */
export const CREDIT = script(`${PRELUDE}
if P.op == 'held' then
  return str((num(redis.call('HGET', P.key, 'unflushed')) or 0) + credit_reserved(P.key))
end
if P.drop ~= nil then
  redis.call('DEL', P.drop[1])
  redis.call('SREM', P.drop[2], OWNER)
end
for _, pair in ipairs(P.charges) do
  local key, amount = pair[1], pair[2]
  if redis.call('EXISTS', key) == 1 then
    local f = redis.call('HMGET', key, 'stored', 'unflushed')
    local unflushed = (num(f[2]) or 0) - amount
    if unflushed < 0 then unflushed = 0 end
    redis.call('HSET', key, 'unflushed', str(unflushed))
    -- A balance re-read since (or never read) already holds the written charges.
    if f[1] ~= false then redis.call('HSET', key, 'stored', str(tonumber(f[1]) - amount)) end
  end
end
return 'ok'
`);

/**
 * Switch-over of one Level: P = {op, key (hash: switchedAt, lastErrorAt, probing owner),
 * errors (window key), now, threshold, windowMs, quietSince, probe}. Answers the status
 * after (switchedAt, lastErrorAt, probing; '' for none) or, for claimProbe, 1 or 0.
 */
export const LEVEL = script(`${PRELUDE}
local key = P.key
local function probing()
  local owner = redis.call('HGET', key, 'probing')
  return owner ~= false and owner ~= '' and alive(owner)
end
local function status()
  local f = redis.call('HMGET', key, 'switchedAt', 'lastErrorAt')
  return { f[1] or '', f[2] or '', probing() and '1' or '' }
end
if P.op == 'status' then return status() end
if P.op == 'recordError' then
  redis.call('HSET', key, 'lastErrorAt', str(P.now), 'probing', '')
  window_add(P.errors, P.windowMs, 1, P.now)
  if redis.call('HGET', key, 'switchedAt') == false and window_sum(P.errors, P.windowMs, P.now) > P.threshold then
    redis.call('HSET', key, 'switchedAt', str(P.now))
  end
  return status()
end
if redis.call('EXISTS', key) == 0 then return 0 end
if P.op == 'claimProbe' then
  local f = redis.call('HMGET', key, 'switchedAt', 'lastErrorAt')
  if f[1] == false or probing() or (num(f[2]) or -math.huge) > P.quietSince then return 0 end
  touch()
  redis.call('HSET', key, 'probing', OWNER)
  return 1
end
if P.op == 'recover' then
  if P.probe or redis.call('HGET', key, 'switchedAt') == false then
    redis.call('HDEL', key, 'switchedAt')
    redis.call('HSET', key, 'probing', '')
    if P.probe then redis.call('DEL', P.errors) end
  end
  return 0
end
redis.call('HSET', key, 'probing', '')
return 0
`);

/**
 * Provider keys' health (the rules of key-health.ts, applied here so that they are
 * atomic across processes): a hash per tenant and key of sleeping, reason, until, count,
 * failures, probing (owner) and f<owner> (calls in flight). A key Redis does not hold
 * starts from the sleep stored with it (P.stored). ARGV[5..7]: FAILURES_BEFORE_SLEEP,
 * BASE_COOLDOWN_MS, MAX_COOLDOWN_MS.
 */
export const KEY_HEALTH = script(`${PRELUDE}
local FAILURES, BASE, MAX = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local function probing(key)
  local owner = redis.call('HGET', key, 'probing')
  return owner ~= false and owner ~= '' and alive(owner)
end
local function in_flight(key)
  local all = redis.call('HGETALL', key)
  local total = 0
  for i = 1, #all, 2 do
    local field = all[i]
    if string.sub(field, 1, 1) == 'f' then
      if alive(string.sub(field, 2)) then total = total + tonumber(all[i + 1]) else redis.call('HDEL', key, field) end
    end
  end
  return total
end
local function sleep_of(s) return { s.sleeping and '1' or '', s.reason or '', s['until'] and str(s['until']) or '', str(s.count) } end
local function set_sleep(key, s)
  local v = sleep_of(s)
  redis.call('HSET', key, 'sleeping', v[1], 'reason', v[2], 'until', v[3], 'count', v[4])
  return v
end
local function init(key, stored)
  if redis.call('HEXISTS', key, 'sleeping') == 0 then
    set_sleep(key, stored)
    redis.call('HSET', key, 'failures', '0', 'probing', '')
  end
end

if P.op == 'health' then
  local out = {}
  for _, k in ipairs(P.keys) do
    if redis.call('HEXISTS', k.key, 'sleeping') == 0 then
      local v = sleep_of(k.stored)
      out[#out + 1] = { v[1], v[2], v[3], v[4], '0', '0', '' }
    else
      local f = redis.call('HMGET', k.key, 'sleeping', 'reason', 'until', 'count', 'failures')
      out[#out + 1] = { f[1], f[2], f[3], f[4], str(in_flight(k.key)), f[5] or '0', probing(k.key) and '1' or '' }
    end
  end
  return out
end

local key = P.key
if P.op == 'release' then
  if redis.call('EXISTS', key) == 0 then return 0 end
  local field = 'f' .. OWNER
  local n = (num(redis.call('HGET', key, field)) or 0) - 1
  if n < 0 then n = 0 end
  -- A probe that ended without a verdict (client gone) must not block the next one.
  redis.call('HSET', key, field, str(n), 'probing', '')
  return 1
end

init(key, P.stored)
if P.op == 'take' then
  touch()
  if P.probe then
    if probing(key) then return 0 end
    redis.call('HSET', key, 'probing', OWNER)
  end
  redis.call('HSET', key, 'f' .. OWNER, str((num(redis.call('HGET', key, 'f' .. OWNER)) or 0) + 1))
  return 1
end
if P.op == 'setSleep' then
  set_sleep(key, P.sleep)
  redis.call('HSET', key, 'failures', '0')
  return 1
end

-- record: key-health.ts applyVerdict.
local was_probing = probing(key)
redis.call('HSET', key, 'probing', '')
local f = redis.call('HMGET', key, 'sleeping', 'reason', 'count', 'failures')
local sleeping, reason, count, failures = f[1] == '1', f[2], num(f[3]) or 0, num(f[4]) or 0
local v = P.verdict
if v.kind == 'success' then
  redis.call('HSET', key, 'failures', '0')
  if not sleeping and count == 0 then return false end
  if sleeping and reason ~= 'errors' then return false end
  return set_sleep(key, { sleeping = false, count = 0 })
end
if P.noSleep then return false end
if v.kind == 'credential' then
  redis.call('HSET', key, 'failures', '0')
  return set_sleep(key, { sleeping = true, reason = 'auth', count = count })
end
failures = failures + 1
if not was_probing and failures < FAILURES then
  redis.call('HSET', key, 'failures', str(failures))
  return false
end
redis.call('HSET', key, 'failures', '0')
local n = count + 1
local cooldown = math.min(BASE * 2 ^ math.max(0, n - 1), MAX)
return set_sleep(key, { sleeping = true, reason = 'errors', ['until'] = P.now + math.max(cooldown, v.retryAfterMs or 0), count = n })
`);

/** A one-time claim: P = {key, now, ttl}; 1 when won. */
export const CLAIM = script(`${PRELUDE}
local held = num(redis.call('GET', P.key))
if held ~= nil and held > P.now then return 0 end
redis.call('SET', P.key, str(P.now + P.ttl), 'PX', math.max(1, P.ttl))
return 1
`);

/**
 * Usage rows waiting for the database (a list of JSON rows, oldest first) and what each
 * process claimed of them to write (its own list, its owner id in the claims set).
 * P = {queue, claims, claimPrefix, max}. Answers {kind, waiting, row…}: 'retry' with the
 * rows of an unfinished claim (this process's own, or one a dead process left: its lease
 * expired), which may be in the database already; 'new' with up to max rows moved from
 * the queue to this process's claim; 'none' when nothing waits. `waiting` is the queue's
 * length after the claim.
 */
export const USAGE_CLAIM = script(`${PRELUDE}
local mine = P.claimPrefix .. OWNER
local held = redis.call('LRANGE', mine, 0, -1)
if #held > 0 then return { 'retry', redis.call('LLEN', P.queue), unpack(held) } end
for _, other in ipairs(redis.call('SMEMBERS', P.claims)) do
  if other ~= OWNER and not alive(other) then
    redis.call('SREM', P.claims, other)
    local theirs = P.claimPrefix .. other
    if redis.call('EXISTS', theirs) == 1 then
      redis.call('RENAME', theirs, mine)
      redis.call('SADD', P.claims, OWNER)
      return { 'retry', redis.call('LLEN', P.queue), unpack(redis.call('LRANGE', mine, 0, -1)) }
    end
  end
end
local rows = redis.call('LRANGE', P.queue, 0, P.max - 1)
if #rows == 0 then return { 'none', 0 } end
redis.call('LTRIM', P.queue, #rows, -1)
redis.call('RPUSH', mine, unpack(rows))
redis.call('SADD', P.claims, OWNER)
return { 'new', redis.call('LLEN', P.queue), unpack(rows) }
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
-- 'R' before a row flags it (rows are JSON objects, so they start with '{').
for i = #rows, 1, -1 do
  local row = rows[i]
  if string.sub(row, 1, 1) ~= 'R' then row = 'R' .. row end
  redis.call('LPUSH', P.queue, row)
end
redis.call('DEL', mine)
redis.call('SREM', P.claims, OWNER)
return #rows
`);
