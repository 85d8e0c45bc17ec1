import { script } from "./connection.ts";
import { PRELUDE } from "./lua.ts";
import { SLIDING_WINDOWS } from "./lua-windows.ts";

/* The Lua scripts of the Redis State's switch-over Levels, provider keys' health and one-time claims (conventions in lua.ts). */

/**
 * Switch-over of one Level: P = {op, key (hash: switchedAt, lastErrorAt, probing owner),
 * errors (window key), now, threshold, windowMs, quietSince, probe}. Answers the status
 * after (switchedAt, lastErrorAt, probing; '' for none) or, for claimProbe, 1 or 0.
 */
export const LEVEL = script(`${PRELUDE}${SLIDING_WINDOWS}
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
  window_add(P.errors, P.windowMs, 1, P.now, 1)
  if redis.call('HGET', key, 'switchedAt') == false and window_sum(P.errors, P.windowMs, P.now, false, 1) > P.threshold then
    redis.call('HSET', key, 'switchedAt', str(P.now))
  end
  flush_windows()
  return status()
end
-- A probe of this process whose claim (P.o, P.b its operation: repairs.ts) or end was
-- unanswered: that claim is let go if it ran and still holds the probe (not a later
-- claim of this process); a claim that had not run never will.
if P.op == 'unclaim' then
  if op_counts(P.o, P.b) then return 0 end
  if redis.call('SETBIT', P.o, P.b + 1, 1) == 1 then return 0 end
  P.op = 'letgo'
end
if P.op == 'letgo' then
  local f = redis.call('HMGET', key, 'probing', 'probingOp')
  if f[1] == OWNER and f[2] == P.o .. ':' .. P.b then redis.call('HSET', key, 'probing', '') end
  return 1
end
if redis.call('EXISTS', key) == 0 then return 0 end
if P.op == 'claimProbe' then
  local f = redis.call('HMGET', key, 'switchedAt', 'lastErrorAt')
  if f[1] == false or probing() or (num(f[2]) or -math.huge) > P.quietSince then return 0 end
  if not op_counts(P.o, P.b) then return 0 end
  touch()
  redis.call('HSET', key, 'probing', OWNER, 'probingOp', P.o .. ':' .. P.b)
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
  -- One read per key (the request path asks on every call): its whole hash.
  local out = {}
  for _, k in ipairs(P.keys) do
    local all = redis.call('HGETALL', k.key)
    local h, flight = {}, 0
    for i = 1, #all, 2 do
      local field = all[i]
      if string.sub(field, 1, 1) == 'f' and field ~= 'failures' then
        if alive(string.sub(field, 2)) then flight = flight + tonumber(all[i + 1]) else redis.call('HDEL', k.key, field) end
      else h[field] = all[i + 1] end
    end
    if h.sleeping == nil then
      local v = sleep_of(k.stored)
      out[#out + 1] = { v[1], v[2], v[3], v[4], '0', '0', '' }
    else
      local owner = h.probing
      local probe = owner ~= nil and owner ~= '' and alive(owner)
      out[#out + 1] = { h.sleeping, h.reason or '', h['until'] or '', h.count or '0', str(flight), h.failures or '0', probe and '1' or '' }
    end
  end
  return out
end

local key = P.key
if P.op == 'flight' then
  -- P.keys: {key, stored, t, r} per key: t calls of this process began on it and r ended
  -- (gathered over a few ms). A call's begin is never in a later run than its end, and
  -- within a run begins count first, so the count never goes below zero on the way.
  -- P.o, P.b: the run's operation (repairs.ts): sent again after a lost answer, it counts once.
  if not op_counts(P.o, P.b) then return 1 end
  local field = 'f' .. OWNER
  local touched = false
  for _, k in ipairs(P.keys) do
    if k.t > 0 then
      if not touched then touch(); touched = true end
      init(k.key, k.stored)
      redis.call('HINCRBYFLOAT', k.key, field, str(k.t))
    end
    if k.r > 0 and redis.call('EXISTS', k.key) == 1 then
      local n = (num(redis.call('HGET', k.key, field)) or 0) - k.r
      if n < 0 then n = 0 end
      -- A probe that ended without a verdict (client gone) must not block the next one.
      redis.call('HSET', k.key, field, str(n), 'probing', '')
    end
  end
  return 1
end

-- key-health.ts applyVerdict, on one key; false when its sleep does not change.
local function record(key, stored, noSleep, v, now)
  if v.kind == 'success' then
    -- The common case, a success on a healthy key that no probe holds, changes nothing: one read.
    local f = redis.call('HMGET', key, 'sleeping', 'count', 'failures', 'probing')
    if f[1] == '' and num(f[2]) == 0 and num(f[3]) == 0 and f[4] == '' then return false end
  end
  init(key, stored)
  local was_probing = probing(key)
  redis.call('HSET', key, 'probing', '')
  local f = redis.call('HMGET', key, 'sleeping', 'reason', 'count', 'failures')
  local sleeping, reason, count, failures = f[1] == '1', f[2], num(f[3]) or 0, num(f[4]) or 0
  if v.kind == 'success' then
    redis.call('HSET', key, 'failures', '0')
    if not sleeping and count == 0 then return false end
    if sleeping and reason ~= 'errors' then return false end
    return set_sleep(key, { sleeping = false, count = 0 })
  end
  if noSleep then return false end
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
  return set_sleep(key, { sleeping = true, reason = 'errors', ['until'] = now + math.max(cooldown, v.retryAfterMs or 0), count = n })
end

if P.op == 'record' then return record(key, P.stored, P.noSleep, P.verdict, P.now) end
if P.op == 'successes' then
  -- P.keys: {key, stored, noSleep} per key that served calls (gathered over a few ms); per key its new sleep, or {}.
  local out = {}
  for i, k in ipairs(P.keys) do out[i] = record(k.key, k.stored, k.noSleep, { kind = 'success' }, 0) or {} end
  return out
end

if P.op == 'untake' then
  -- A probe's take whose answer was lost (P.o, P.b its operation): taken back if it ran,
  -- else it never will. The probe is this process's own, so only its own claim is cleared.
  if op_counts(P.o, P.b) then return 0 end
  if redis.call('SETBIT', P.o, P.b + 1, 1) == 1 or redis.call('EXISTS', key) == 0 then return 0 end
  local field = 'f' .. OWNER
  local n = (num(redis.call('HGET', key, field)) or 0) - 1
  if n < 0 then n = 0 end
  redis.call('HSET', key, field, str(n))
  -- Only that claim, if it still holds the probe (not a later claim of this process).
  local f = redis.call('HMGET', key, 'probing', 'probingOp')
  if f[1] == OWNER and f[2] == P.o .. ':' .. P.b then redis.call('HSET', key, 'probing', '') end
  return 1
end

init(key, P.stored)
if P.op == 'take' then
  -- A refused probe counts nothing, and its operation is left clear (an undo then blocks it).
  if P.probe and probing(key) then return 0 end
  if not op_counts(P.o, P.b) then return 0 end
  touch()
  if P.probe then redis.call('HSET', key, 'probing', OWNER, 'probingOp', (P.o or '') .. ':' .. (P.b or '')) end
  redis.call('HINCRBYFLOAT', key, 'f' .. OWNER, '1')
  return 1
end
if P.op == 'setSleep' then
  set_sleep(key, P.sleep)
  redis.call('HSET', key, 'failures', '0')
  return 1
end
return redis.error_reply('unknown key-health operation')
`);

/** A one-time claim: P = {key, now, ttl}; 1 when won. */
export const CLAIM = script(`${PRELUDE}
local held = num(redis.call('GET', P.key))
if held ~= nil and held > P.now then return 0 end
redis.call('SET', P.key, str(P.now + P.ttl), 'PX', math.max(1, P.ttl))
return 1
`);
