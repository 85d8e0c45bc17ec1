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
  if num(redis.call('HINCRBYFLOAT', key, OWNER, str(delta))) < 0 then redis.call('HSET', key, OWNER, '0') end
end

-- Period totals: a hash of day (the period) and value, read once per script (PERIODS)
-- and their value written back once (flush_periods).
local PERIODS, PERIODS_CHANGED = {}, {}
local function period_of(key)
  local t = PERIODS[key]
  if t == nil then
    local f = redis.call('HMGET', key, 'day', 'value')
    t = { f[1], num(f[2]) or 0 }
    PERIODS[key] = t
  end
  return t
end
local function period_seed(key, period, value, ttl)
  redis.call('HSET', key, 'day', period, 'value', str(value))
  redis.call('PEXPIRE', key, ttl)
  PERIODS[key] = { period, value }
end
-- The total of period p: nothing while Redis holds another.
local function period_value(key, p)
  local t = period_of(key)
  if t[1] == p then return t[2] end
  return 0
end
local function period_add(key, p, amount)
  local t = period_of(key)
  if t[1] == p then t[2] = t[2] + amount; PERIODS_CHANGED[key] = true end
end
local function flush_periods()
  for key, _ in pairs(PERIODS_CHANGED) do redis.call('HSET', key, 'value', str(PERIODS[key][2])) end
  PERIODS_CHANGED = {}
end

-- Sliding windows, as RingWindow in memory-windows.ts: a ring of 61 buckets of
-- windowMs/60 (the 60 of the window and the one it overlaps), a running total, and a
-- bucket counts while its newest event is less than a window old. A window is one
-- string of doubles: ms, head (newest bucket's start), total, first (start of the oldest
-- bucket with an event; -inf when none), then per slot its start, newest event and
-- amount (newest -inf while it has none). A script reads it once (GET), decodes only the
-- slots it visits, and writes it back once (flush_windows) with only the slots it changed
-- packed again. Buckets stop counting in the order they began (each one's newest event is
-- older than the next one's start), so a sum is the total less the oldest slots that no
-- longer count, usually one: a hash of 122 fields read whole, up to three times per
-- window and script, cost an admission of ten windows 0.7 ms of Redis's time.
local SLOTS, SLOT_BYTES, HEADER_BYTES = 61, 24, 32
local WINDOWS, DIRTY = {}, {}
local function width_of(ms) return math.max(1, math.ceil(ms / 60)) end
local function window_of(key, ms)
  local w = WINDOWS[key]
  if w ~= nil and w.ms == ms then return w end
  local raw = false
  if w == nil then raw = redis.call('GET', key) end
  w = { ms = ms, width = width_of(ms), head = -math.huge, total = 0, first = -math.huge, raw = false, slots = {}, changed = {} }
  -- Nothing stored, or another length (a new series, written only once something is added).
  if raw and #raw == HEADER_BYTES + SLOTS * SLOT_BYTES then
    local stored, head, total, first = struct.unpack('<dddd', raw)
    if stored == ms then w.head = head; w.total = total; w.first = first; w.raw = raw end
  end
  WINDOWS[key] = w
  return w
end
-- Slot i (0 to 60) as {start, latest, amount}, decoded once.
local function slot(w, i)
  local s = w.slots[i]
  if s == nil then
    if w.raw then
      local start, latest, amount = struct.unpack('<ddd', w.raw, HEADER_BYTES + 1 + SLOT_BYTES * i)
      s = { start, latest, amount }
    else s = { -math.huge, -math.huge, 0 } end
    w.slots[i] = s
  end
  return s
end
-- The k-th oldest slot of the ring (k from 0), and where the bucket starting at b is in it.
local function ring_slot(w, k) return slot(w, (math.floor(w.head / w.width) - 60 + k) % SLOTS) end
local function ring_index(w, b) return math.floor((b - w.head) / w.width + 0.5) + 60 end
local function counts(w, s, now, later) return (later or s[1] <= now) and s[2] > now - w.ms end
-- later: also buckets that began after now (an admission whose clock reading is older
-- than another's already counted must still see it).
local function window_sum(key, ms, now, later)
  local w = window_of(key, ms)
  if w.head == -math.huge then return 0 end
  -- Only buckets that began a window ago or more can have stopped counting: the walk
  -- ends at the first that began later or still counts.
  local horizon, total, k = now - ms, w.total, 0
  while k < SLOTS do
    local s = ring_slot(w, k)
    if s[1] > horizon or s[2] > horizon then break end
    total = total - s[3]
    k = k + 1
  end
  if not later then
    -- Buckets begin in ring order too: those after now are the newest.
    local j = SLOTS - 1
    while j >= k do
      local s = ring_slot(w, j)
      if s[1] <= now then break end
      total = total - s[3]
      j = j - 1
    end
  end
  return total
end
-- The buckets that count, oldest (so newest event) first, from the oldest with an event.
local function each_live(w, now, later, visit)
  if w.first == -math.huge then return end
  for k = math.max(0, ring_index(w, w.first)), SLOTS - 1 do
    local s = ring_slot(w, k)
    if counts(w, s, now, later) and visit(s) then return end
  end
end
local function window_retry(key, ms, now, limit, later)
  local total = window_sum(key, ms, now, later)
  if total < limit then return 0 end
  local wait = ms
  each_live(window_of(key, ms), now, later, function(s)
    total = total - s[3]
    if total < limit then wait = math.max(0, s[2] + ms - now); return true end
  end)
  return wait
end
-- Until the oldest amount counting at now slides out (0 when none counts).
local function window_reset(key, ms, now)
  local reset = 0
  each_live(window_of(key, ms), now, true, function(s)
    if s[3] ~= 0 then reset = math.max(0, s[2] + ms - now); return true end
  end)
  return reset
end
local function change(w, i)
  local s = slot(w, i)
  w.changed[i] = true
  return s
end
local function window_add(key, ms, amount, at)
  local w = window_of(key, ms)
  local width = w.width
  local start = math.floor(at / width) * width
  if start > w.head then
    -- The head moves on: the slots it passes start empty buckets.
    local steps = SLOTS
    if w.head ~= -math.huge then steps = math.min(SLOTS, math.floor((start - w.head) / width + 0.5)) end
    for k = 0, steps - 1 do
      local b = start - k * width
      local s = change(w, math.floor(b / width) % SLOTS)
      w.total = w.total - s[3]
      s[1] = b; s[2] = -math.huge; s[3] = 0
    end
    w.head = start
    w.moved = true
    -- The oldest bucket with an event left the ring: the next one is the first.
    if w.first ~= -math.huge and ring_index(w, w.first) < 0 then
      w.first = -math.huge
      for k = 0, SLOTS - 1 do
        local s = ring_slot(w, k)
        if s[2] ~= -math.huge then w.first = s[1]; break end
      end
    end
  end
  DIRTY[key] = true
  local i = math.floor(at / width) % SLOTS
  -- Older than the ring (a clock step back, a reservation made over a window ago): it could not count any more.
  if slot(w, i)[1] ~= start then return end
  local s = change(w, i)
  s[3] = s[3] + amount
  w.total = w.total + amount
  if amount > 0 and at > s[2] then
    s[2] = at
    if w.first == -math.huge or start < w.first then w.first = start end
  end
end
-- Writes the windows this script changed. A stored window gets its header and each run of
-- changed slots in place (SETRANGE: a call or two, where packing and storing the whole
-- string again cost 6 µs a window); a new one is written whole. Its lifetime is set when
-- its head moves: the newest event is then at most a bucket younger than the head, so two
-- windows and a second from there outlive it by more than a window. Every script that adds
-- to a window calls this before it answers.
local function flush_windows()
  for key, _ in pairs(DIRTY) do
    local w = WINDOWS[key]
    local header = struct.pack('<dddd', w.ms, w.head, w.total, w.first)
    if w.raw then
      redis.call('SETRANGE', key, 0, header)
      local changed = {}
      for i, _ in pairs(w.changed) do changed[#changed + 1] = i end
      table.sort(changed)
      local k = 1
      while k <= #changed do
        -- A run of adjacent slots goes in one SETRANGE.
        local first, parts = changed[k], {}
        repeat
          local s = w.slots[changed[k]]
          parts[#parts + 1] = struct.pack('<ddd', s[1], s[2], s[3])
          k = k + 1
        until k > #changed or changed[k] ~= changed[k - 1] + 1
        redis.call('SETRANGE', key, HEADER_BYTES + SLOT_BYTES * first, table.concat(parts))
      end
      if w.moved then redis.call('PEXPIRE', key, 2 * w.ms + 1000) end
    else
      local parts = { header }
      for i = 0, SLOTS - 1 do
        local s = slot(w, i)
        parts[#parts + 1] = struct.pack('<ddd', s[1], s[2], s[3])
      end
      redis.call('SET', key, table.concat(parts), 'PX', 2 * w.ms + 1000)
    end
  end
  DIRTY = {}
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
    if period_of(line.key)[1] ~= line.p then
      if line.s ~= nil then period_seed(line.key, line.p, line.s, PERIOD_TTL)
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
  elseif line.k == 'p' then return period_value(line.key, line.p)
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
    elseif line.k == 'p' then period_add(line.key, line.p, line.a)
    elseif line.k == 'g' then gauge_add(line.key, line.a)
    else redis.call('HINCRBYFLOAT', line.key, 'r' .. OWNER, str(line.a)) end
  end
end
flush_windows()
flush_periods()
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
    local day = period_of(c.key)[1]
    if day ~= c.p and not (day ~= false and day > c.p) then
      if c.s ~= nil then period_seed(c.key, c.p, c.s, PERIOD_TTL)
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
    if c.d ~= 0 then period_add(c.key, c.p, c.d) end
  elseif c.k == 'g' then gauge_add(c.key, c.d)
  else
    local field = 'r' .. OWNER
    local f = redis.call('HMGET', c.key, field, 'unflushed')
    local reserved = (num(f[1]) or 0) - c.rel
    if reserved < 0 then reserved = 0 end
    redis.call('HSET', c.key, field, str(reserved), 'unflushed', str((num(f[2]) or 0) + c.ch))
  end
end
flush_windows()
flush_periods()
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
