/*
 * The Lua functions of an account's credit hash in Redis (conventions in lua.ts): part of
 * COUNTERS, which every script counting credit includes after the PRELUDE (they use its
 * str, num and alive).
 */
export const CREDIT_CELLS = `
-- Credit: a hash of stored (ledger balance when read, less charges written since),
-- staleAt (empty: never), version (the ledger's when read; empty: unknown), exp (its
-- expiring grants as the ledger holds them, JSON [[at, remaining]…] soonest first; empty:
-- unknown), unflushed (charges not written yet) and r<owner> (reservations). Beside it,
-- <key>:recent, the last RECENT announcements of written charges as a sorted set by
-- version ('version:amount:at'): a balance read at version v and stored after some of
-- them were announced takes off those after v (committed after the read).
-- q<owner>: the part of unflushed that owner's settlements counted and whose usage rows it
-- has not appended to the queue yet (USAGE_APPEND takes them off as it appends). A process
-- killed in between never appends them: those charges have no row anywhere and would be
-- held against the account for good, so when the owner's lease has ended they leave
-- unflushed with the field.
-- Read whole: stored (nil: Redis holds no balance), unflushed, staleAt, and the
-- reservations of living owners (those of dead owners are dropped).
local function credit_read(key)
  local c = { unflushed = 0, reserved = 0 }
  local orphaned = 0
  local all = redis.call('HGETALL', key)
  for i = 1, #all, 2 do
    local field, v = all[i], all[i + 1]
    if field == 'stored' then c.stored = num(v)
    elseif field == 'unflushed' then c.unflushed = num(v) or 0
    elseif field == 'staleAt' then c.staleAt = num(v)
    elseif field == 'exp' then if v ~= '' then c.exp = v end
    elseif field == 'fl' then c.fl = v
    elseif string.sub(field, 1, 1) == 'r' then
      if alive(string.sub(field, 2)) then c.reserved = c.reserved + tonumber(v) else redis.call('HDEL', key, field) end
    elseif string.sub(field, 1, 1) == 'q' then
      if not alive(string.sub(field, 2)) then orphaned = orphaned + (num(v) or 0); redis.call('HDEL', key, field) end
    end
  end
  if orphaned > 0 then
    c.unflushed = math.max(0, c.unflushed - orphaned)
    redis.call('HSET', key, 'unflushed', str(c.unflushed))
  end
  return c
end
local function credit_reserved(key) return credit_read(key).reserved end
-- Expiring grants (src/state/expiring-credit.ts, the same rules): charges written at t
-- draw from the grants unexpired then, soonest first; at an expiry the grant's remaining
-- leaves the balance.
local function exp_draw(exp, amount, t)
  local after, left = {}, amount
  for _, g in ipairs(exp) do
    local used = 0
    if g[1] > t then used = math.min(left, g[2]) end
    left = left - used
    if g[2] - used > 0 then after[#after + 1] = { g[1], g[2] - used } end
  end
  return after
end
-- Written with str(): cjson keeps 14 digits, and a balance in nano-credits has more.
-- Announcements kept per account, and how long an idle account keeps them (ms).
local RECENT, RECENT_TTL_MS = 32, 60000
local function recent_note(key, v, amount, t)
  local set = key .. ':recent'
  redis.call('ZADD', set, v, str(v) .. ':' .. str(amount) .. ':' .. str(t))
  redis.call('ZREMRANGEBYRANK', set, 0, -(RECENT + 1))
  redis.call('PEXPIRE', set, RECENT_TTL_MS)
end
-- The announced charges written after a read at version v (all when v is unknown), as {amount, at}.
local function recent_after(key, v)
  local after = {}
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', key .. ':recent', v and ('(' .. str(v)) or '-inf', '+inf')) do
    local _, amount, at = string.match(m, '^([^:]+):([^:]+):([^:]+)$')
    after[#after + 1] = { tonumber(amount), tonumber(at) }
  end
  return after
end
local function exp_encode(exp)
  local parts = {}
  for i, g in ipairs(exp) do parts[i] = '[' .. str(g[1]) .. ',' .. str(g[2]) .. ']' end
  return '[' .. table.concat(parts, ',') .. ']'
end
`;
