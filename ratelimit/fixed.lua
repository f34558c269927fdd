-- fixed.lua: FixedWindow, one rule (appended to single.lua, which lists
-- KEYS, ARGV and the reply). The state key is the counter
-- ratelimit:api:{id}:{window} or ratelimit:ip:{ip}:{endpoint}:{window}.
--
-- INCRBY first, since most requests are admitted, and DECRBY in the same
-- atomic script when that overshoots RATE: no other command can see the
-- overshoot, and a refusal leaves the count as it was. The window is the
-- counter's TTL, set when INCRBY creates the counter and restored if found
-- missing (a repair), so no TIME is needed.

local n = pcall_('INCRBY', key, cost)
if type(n) == 'table' then return {-1, KI, 0, 0} end
if n < cost then
  -- the counter was negative: not a value this package writes; undo
  call('DECRBY', key, cost)
  return {-1, KI, 0, 0}
end
local ttl
if n == cost then
  ttl = PMS
  call('PEXPIRE', key, PMS)
else
  ttl = call('PTTL', key)
  if ttl < 0 then
    ttl = PMS
    call('PEXPIRE', key, PMS)
  end
end
if n > RATE then
  call('DECRBY', key, cost)
  local rem = RATE - n + cost
  if rem < 0 then rem = 0 end
  return {0, rem, ttl * 1000, ttl * 1000}
end
return {1, RATE - n, 0, ttl * 1000}
