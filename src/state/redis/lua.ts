import { script } from "./connection.ts";

/**
 * The Lua scripts of the Redis State's counters and credit (and, in lua-keys.ts, of its
 * Levels, key health and claims). Redis runs each script to its end before any other
 * command, so a script is the unit of atomicity: an admission's check and counting, a
 * settlement, a key's verdict. Numbers travel as strings written with `%.17g` (exact for
 * the integers a double holds; Lua's own `tostring` keeps only 14 digits, and a number
 * returned from a script is cut to an integer by Redis).
 *
 * Every script takes the same first arguments: ARGV[1] the prefix of lease keys, ARGV[2]
 * this process's owner id, ARGV[3] the lease's length in ms, ARGV[4] a JSON payload.
 */
export const PRELUDE = `
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
-- later: also buckets that began after now (an admission whose clock reading is older
-- than another's already counted must still see it).
local function window_live(key, ms, now, later)
  local h = window_fields(key, ms)
  local live = {}
  if h == nil then return live end
  for field, amount in pairs(h) do
    if string.sub(field, 1, 1) == 'a' then
      local start = tonumber(string.sub(field, 2))
      local latest = num(h['l' .. string.sub(field, 2)])
      if latest ~= nil and (later or start <= now) and latest > now - ms then live[#live + 1] = { latest, tonumber(amount) } end
    end
  end
  return live
end
local function window_sum(key, ms, now, later)
  local total = 0
  for _, b in ipairs(window_live(key, ms, now, later)) do total = total + b[2] end
  return total
end
local function window_retry(key, ms, now, limit, later)
  local live = window_live(key, ms, now, later)
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
-- Until the oldest amount counting at now slides out (0 when none counts).
local function window_reset(key, ms, now)
  local oldest = nil
  for _, b in ipairs(window_live(key, ms, now, true)) do
    if b[2] ~= 0 and (oldest == nil or b[1] < oldest) then oldest = b[1] end
  end
  if oldest == nil then return 0 end
  return math.max(0, oldest + ms - now)
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
 * l (limit), a (add), h (held gauge key), r (report: 1 requests, 2 tokens), s (seed),
 * b (balance), st (stale at)}. First the lines whose period total or balance Redis does
 * not hold are either filled from what the caller loaded (s, b) or named in a
 * {'load', i…} answer; then, in mode 'admit', every limit is checked and, when none is
 * reached, every amount added: {'ok', requests line, remaining, reset, tokens line,
 * remaining, reset} (the reported lines with the least remaining once counted; '' where
 * none, and a period's reset '') or {'no', line, used, held, retryAfterMs}; in mode
 * 'read', the first line's value.
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

local function value(line, admitting)
  if line.k == 'w' then return window_sum(line.key, line.w, NOW, admitting)
  elseif line.k == 'p' then
    local f = redis.call('HMGET', line.key, 'day', 'value')
    if f[1] == line.p then return num(f[2]) or 0 end
    return 0
  elseif line.k == 'g' then return gauge_sum(line.key)
  else return credit_value(line.key) end
end

if MODE == 'read' then return { 'value', str(value(P[1])) } end

-- The reported lines with the least remaining, per kind (index 1 requests, 2 tokens).
local tight_line, tight_left = {}, {}
for i, line in ipairs(P) do
  if line.l ~= nil then
    -- Concurrent admissions may carry clock readings out of order: count what came after NOW too.
    local used = value(line, true)
    local reached
    if line.k == 'c' then reached = used <= line.l else reached = used >= line.l end
    if reached then
      local held, retry = 0, 0
      if line.k == 'c' then held = credit_reserved(line.key) elseif line.h ~= nil then held = gauge_sum(line.h) end
      if line.k == 'w' then retry = window_retry(line.key, line.w, NOW, line.l, true) end
      return { 'no', tostring(i - 1), str(used), str(held), str(retry) }
    end
    if line.r ~= nil then
      local left = math.max(0, line.l - used - line.a)
      if tight_line[line.r] == nil or left < tight_left[line.r] then tight_line[line.r] = i; tight_left[line.r] = left end
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
local answer = { 'ok' }
for kind = 1, 2 do
  local i = tight_line[kind]
  if i == nil then
    answer[#answer + 1] = ''; answer[#answer + 1] = ''; answer[#answer + 1] = ''
  else
    local line = P[i]
    answer[#answer + 1] = tostring(i - 1)
    answer[#answer + 1] = str(tight_left[kind])
    answer[#answer + 1] = line.k == 'w' and str(window_reset(line.key, line.w, NOW)) or ''
  end
end
return answer
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
