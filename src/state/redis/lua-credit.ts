import { script } from "./connection.ts";
import { COUNTERS, PRELUDE } from "./lua.ts";

/**
 * Credit outside admission: P = {op: 'held', key} | {op: 'flushed', charges: [[key, amount]…],
 * v?: ledger version they were written at, now: when, drop?: [claim list, claims set]}. With drop, the
 * drained claim of usage rows whose charges these are goes in the same step: a process
 * dying in between can neither leave the charges counted as unwritten for good nor have
 * them written off twice; a claim no longer there takes nothing off. A balance read at version v or later holds them already;
 * without v, the balance is dropped (read again at its next use).
 */
export const CREDIT = script(`${PRELUDE}${COUNTERS}
if P.op == 'held' then
  local c = credit_read(P.key)
  return str(c.unflushed + c.reserved)
end
if P.drop ~= nil then
  local held = redis.call('DEL', P.drop[1])
  redis.call('SREM', P.drop[2], OWNER)
  -- The claim is gone: its charges were taken off by whoever took it over (this process's
  -- lease expired meanwhile), or Redis lost them with it (a restart).
  if held == 0 then return 'gone' end
end
for _, pair in ipairs(P.charges) do
  local key, amount = pair[1], pair[2]
  -- A balance being read elsewhere right now must not be stored without these charges:
  -- with a version they are noted (a read stored at v takes off those after v), without
  -- one the count fl moves (a read that began before it is made again). Even with no hash
  -- here (Redis lost it): a read under way stores one.
  if P.v ~= nil then recent_note(key, P.v, amount, P.now) else redis.call('HINCRBY', key, 'fl', 1) end
  if redis.call('EXISTS', key) == 1 then
    local f = redis.call('HMGET', key, 'stored', 'unflushed', 'version', 'exp')
    local unflushed = (num(f[2]) or 0) - amount
    if unflushed < 0 then unflushed = 0 end
    redis.call('HSET', key, 'unflushed', str(unflushed))
    -- Without a version the balance is read again; a balance never read, or read at the
    -- charges' version or later, holds them already.
    local readAt = num(f[3])
    if P.v == nil then redis.call('HDEL', key, 'stored', 'staleAt', 'version', 'exp')
    elseif f[1] ~= false and (readAt == nil or P.v > readAt) then
      redis.call('HSET', key, 'stored', str(tonumber(f[1]) - amount))
      if f[4] ~= false and f[4] ~= '' then redis.call('HSET', key, 'exp', exp_encode(exp_draw(cjson.decode(f[4]), amount, P.now))) end
    end
  end
end
return 'ok'
`);
