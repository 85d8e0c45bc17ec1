import { CREDIT_CELLS } from "./lua-credit-cells.ts";
import { script } from "./connection.ts";
import { SLIDING_WINDOWS } from "./lua-windows.ts";

/**
 * The Lua scripts of the Redis State's counters and credit (credit outside admission in
 * lua-credit.ts; Levels, key health and claims in lua-keys.ts). Redis runs each script to its end before any other
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

-- An operation of this process that counts (repairs.ts) has two bits in a bitmap: the
-- first is set when it counts, or by an undo that found it had not (so it never will).
-- Answers whether the operation counts now (the first bit was clear). No key: always.
local function op_counts(key, bit)
  if key == nil or key == '' then return true end
  if redis.call('SETBIT', key, bit, 1) == 1 then return false end
  redis.call('PEXPIRE', key, 3600000)
  return true
end
`;

/** Gauges, period totals and credit (lua-credit-cells.ts): what admissions and settlements count besides windows. */
export const COUNTERS = `
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

${CREDIT_CELLS}`;

/**
 * Admission (and reads): P is a list of lines {k: w|p|g|c, key, w (window ms), n (the
 * window's lane, 1 or 2: lua-windows.ts), p (period), l (limit), a (add), h (held gauge
 * key), r (report: 1 requests, 2 tokens), s (seed), b (balance), st (stale at), m (an
 * allowance's margin: see below)}. First the lines whose period total or balance Redis does
 * not hold are either filled from what the caller loaded (s, b) or named in a
 * {'load', i…} answer; then, in mode 'admit', every limit is checked and, when none is
 * reached, every amount added: {'ok', requests line, remaining, reset, tokens line,
 * remaining, reset} (the reported lines with the least remaining once counted; '' where
 * none, and a period's reset '') or {'no', line, used, held, retryAfterMs…} (each line reached, the first first); in mode
 * 'read', the first line's value; in mode 'clear', the first line's window lane is
 * emptied. In mode 'many', P is a list of admissions {l: lines, n: now, o, b} and the
 * answer the list of their answers, each as if its own run. An admission carries its
 * operation's key and bit (repairs.ts: ARGV[8], ARGV[9], or o and b in mode 'many') and
 * answers {'dup'}, counting nothing, when that operation counted (or was undone) already.
 *
 * An allowance's grant (allowances.ts) is an admission whose lines with `m` count a block
 * (`a`) and are refused unless `m` more than that would still be under the limit (credit:
 * more than `m` available past the block); its 'ok' answer goes on with the soonest
 * stale-at of those credit lines ('' when none), then per such line its value before the
 * block and, for a window, its reset ('' otherwise).
 */
export const ADMIT = script(`${PRELUDE}${COUNTERS}${SLIDING_WINDOWS}
local MODE, PERIOD_TTL = ARGV[5], tonumber(ARGV[7])

-- A run reads each credit hash and gauge once, and keeps what its admissions reserve in
-- them here until its end (flush_reservations): in mode 'many' the admissions of a run
-- share them, where each read and added to them on its own (a dozen commands each).
local CREDITS, CREDIT_ADDS, GAUGES, GAUGE_ADDS = {}, {}, {}, {}
local function credit_cell(key)
  local c = CREDITS[key]
  if c == nil then
    c = credit_read(key)
    CREDITS[key] = c
  end
  return c
end
local function credit_held(key) return credit_cell(key).reserved + (CREDIT_ADDS[key] or 0) end
local function gauge_now(key)
  local g = GAUGES[key]
  if g == nil then g = gauge_sum(key); GAUGES[key] = g end
  return g + (GAUGE_ADDS[key] or 0)
end
local function flush_reservations()
  for key, d in pairs(GAUGE_ADDS) do gauge_add(key, d) end
  for key, d in pairs(CREDIT_ADDS) do redis.call('HINCRBYFLOAT', key, 'r' .. OWNER, str(d)) end
end

local function value(line, admitting, NOW)
  if line.k == 'w' then return window_sum(line.key, line.w, NOW, admitting, line.n)
  elseif line.k == 'p' then return period_value(line.key, line.p)
  elseif line.k == 'g' then return gauge_now(line.key)
  else
    local c = credit_cell(line.key)
    return (c.stored or 0) - c.unflushed - credit_held(line.key)
  end
end

local touched = false
-- One admission's lines at NOW: its answer ('load', 'value', 'ok' or 'no'); what it
-- counts stays in the script's windows and totals until they are flushed.
local function admit_one(P, NOW, mode, op_key, op_bit)
  local missing = {}
  for i, line in ipairs(P) do
    if line.k == 'p' then
      if period_of(line.key)[1] ~= line.p then
        if line.s ~= nil then period_seed(line.key, line.p, line.s, PERIOD_TTL)
        else missing[#missing + 1] = tostring(i - 1) end
      end
    elseif line.k == 'c' then
      local c = credit_cell(line.key)
      if c.stored == nil or (c.staleAt ~= nil and NOW >= c.staleAt) then
        -- A balance read while a charge was written off without a version (fl moved) may
        -- miss it: read again (the load asks with the count it must find).
        if line.b ~= nil and (line.fl or '') == (c.fl or '') then
          -- Charges committed after this read but announced before it is stored are not in it.
          local stored, exp = line.b, line.e
          local after = recent_after(line.key, line.v)
          if #after > 0 then
            local grants = exp and cjson.decode(exp) or nil
            for _, e in ipairs(after) do
              stored = stored - e[1]
              if grants then grants = exp_draw(grants, e[1], e[2]) end
            end
            if grants then exp = exp_encode(grants) end
          end
          redis.call('HSET', line.key, 'stored', str(stored), 'staleAt', line.st and str(line.st) or '', 'version', line.v and str(line.v) or '', 'exp', exp or '')
          c.stored = stored; c.staleAt = line.st; c.exp = exp
        elseif line.f ~= nil and c.stored ~= nil and c.exp ~= nil then
          -- The ledger cannot be read and the balance only went stale: its expired grants go.
          local left, stored = {}, c.stored
          for _, g in ipairs(cjson.decode(c.exp)) do
            if g[1] > NOW then left[#left + 1] = g else stored = stored - g[2] end
          end
          c.stored = stored; c.staleAt = left[1] and left[1][1] or nil; c.exp = exp_encode(left)
          redis.call('HSET', line.key, 'stored', str(stored), 'staleAt', c.staleAt and str(c.staleAt) or '', 'exp', c.exp)
        else missing[#missing + 1] = tostring(i - 1) .. ':' .. (c.fl or '') end
      end
    end
  end
  if #missing > 0 then return { 'load', unpack(missing) } end
  if mode == 'read' then return { 'value', str(value(P[1], false, NOW)) } end

  -- The reported lines with the least remaining, per kind (index 1 requests, 2 tokens).
  local tight_line, tight_left = {}, {}
  local granting = false
  for _, line in ipairs(P) do if line.m ~= nil then granting = true end end
  -- Every line reached: the first, then the others (the refusal names the longest wait).
  local no = nil
  for i, line in ipairs(P) do
    if line.l ~= nil then
      -- Concurrent admissions may carry clock readings out of order: count what came after NOW too.
      local used = value(line, true, NOW)
      -- An allowance (allowances.ts) asks for m of headroom left over once its block is counted.
      local margin = line.m or 0
      local reached
      if line.k == 'c' then reached = used - margin <= line.l else reached = used + margin >= line.l end
      if line.m ~= nil then line.u = used end
      if reached then
        local held, retry = 0, 0
        if line.k == 'c' then held = credit_held(line.key) elseif line.h ~= nil then held = gauge_now(line.h) end
        if line.k == 'w' then retry = window_retry(line.key, line.w, NOW, line.l, true, line.n) end
        if no == nil then no = { 'no' } end
        no[#no + 1] = tostring(i - 1); no[#no + 1] = str(used); no[#no + 1] = str(held); no[#no + 1] = str(retry)
      elseif line.r ~= nil then
        local left = math.max(0, line.l - used - line.a)
        if tight_line[line.r] == nil or left < tight_left[line.r] then tight_line[line.r] = i; tight_left[line.r] = left end
      end
    end
  end
  if no ~= nil then return no end

  -- Admitted: counted once, even when sent again or undone after its answer was lost.
  if not op_counts(op_key, op_bit) then return { 'dup' } end
  if not touched then touch(); touched = true end
  for _, line in ipairs(P) do
    if line.a ~= 0 then
      if line.k == 'w' then window_add(line.key, line.w, line.a, NOW, line.n)
      elseif line.k == 'p' then period_add(line.key, line.p, line.a)
      elseif line.k == 'g' then GAUGE_ADDS[line.key] = (GAUGE_ADDS[line.key] or 0) + line.a
      else CREDIT_ADDS[line.key] = (CREDIT_ADDS[line.key] or 0) + line.a end
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
      answer[#answer + 1] = line.k == 'w' and str(window_reset(line.key, line.w, NOW, line.n)) or ''
    end
  end
  -- An allowance's grant: when its balances go stale, then per line asked with m its value
  -- before the block was counted and, for a window, when its oldest amount slides out.
  if granting then
    local stale = nil
    for _, line in ipairs(P) do
      if line.m ~= nil and line.k == 'c' then
        local at = credit_cell(line.key).staleAt
        if at ~= nil and (stale == nil or at < stale) then stale = at end
      end
    end
    answer[#answer + 1] = stale and str(stale) or ''
    for _, line in ipairs(P) do
      if line.m ~= nil then
        answer[#answer + 1] = line.u and str(line.u) or ''
        answer[#answer + 1] = line.k == 'w' and str(window_reset(line.key, line.w, NOW, line.n)) or ''
      end
    end
  end
  return answer
end

local answer
if MODE == 'clear' then
  window_clear(P[1].key, P[1].w, P[1].n)
  answer = 'ok'
elseif MODE == 'many' then
  -- Admissions that waited for the run before: P is a list of {l = lines, n = now, o, b =
  -- operation key and bit}, each admitted in turn as if by a run of its own, the windows
  -- and totals read once for all.
  answer = {}
  for i, one in ipairs(P) do answer[i] = admit_one(one.l, one.n, 'admit', one.o, one.b) end
else
  answer = admit_one(P, tonumber(ARGV[6]), MODE, ARGV[8], tonumber(ARGV[9]))
end
flush_windows()
flush_periods()
flush_reservations()
return answer
`);

/**
 * Settlement: P is a list of changes {k: w, key, w, n, at, d} | {k: p, key, p, d, s} |
 * {k: g, key, d} | {k: c, key, rel, ch}. A period change moving to a newer period than
 * Redis holds needs its seed first ({'load', i…}); a change to an older one is dropped.
 * ARGV[5] is the period totals' time to live; ARGV[6] '0' while the process closes (what
 * it gives back then must not renew its lease).
 */
export const ADJUST = script(`${PRELUDE}${COUNTERS}${SLIDING_WINDOWS}
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
-- ARGV[7], ARGV[8]: the operation's key and bit (repairs.ts); ARGV[9] 'undo' takes off what
-- a lost admission of that id counted (P its amounts, negated), once, if it did.
local OP_KEY, OP_BIT = ARGV[7], tonumber(ARGV[8])
if ARGV[9] == 'undo' then
  if op_counts(OP_KEY, OP_BIT) then return { 'blocked' } end
  if redis.call('SETBIT', OP_KEY, OP_BIT + 1, 1) == 1 then return { 'dup' } end
elseif not op_counts(OP_KEY, OP_BIT) then return { 'dup' } end
-- ARGV[6] '0': the process is closing (giving back its allowances' unused blocks) and its lease must not be renewed.
if ARGV[6] ~= '0' then touch() end
for _, c in ipairs(P) do
  if c.k == 'w' then
    if c.d ~= 0 then window_add(c.key, c.w, c.d, c.at, c.n) end
  elseif c.k == 'p' then
    if c.d ~= 0 then period_add(c.key, c.p, c.d) end
  elseif c.k == 'g' then gauge_add(c.key, c.d)
  else
    local field = 'r' .. OWNER
    local f = redis.call('HMGET', c.key, field, 'unflushed', 'q' .. OWNER)
    local reserved = (num(f[1]) or 0) - c.rel
    if reserved < 0 then reserved = 0 end
    redis.call('HSET', c.key, field, str(reserved), 'unflushed', str((num(f[2]) or 0) + c.ch))
    -- Until its row is appended, the charge is also this process's (credit_read, q<owner>).
    if c.ch > 0 then redis.call('HSET', c.key, 'q' .. OWNER, str((num(f[3]) or 0) + c.ch)) end
  end
end
flush_windows()
flush_periods()
return { 'ok' }
`);
