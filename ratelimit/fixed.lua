-- fixed.lua: FixedWindow, one rule (appended to single.lua, which lists
-- KEYS, ARGV and the reply). The state key is the counter
-- ratelimit:api:{id}:{window} or ratelimit:ip:{ip}:{endpoint}:{window}: a
-- decimal integer, as seed 001's applications INCR it.
--
-- INCRBY first, since most requests are admitted, and DECRBY in the same
-- atomic script when that overshoots RATE: no other command can see the
-- overshoot, and a refusal leaves the count as it was. The window is the
-- counter's TTL, set when INCRBY creates the counter and restored if found
-- missing (a repair), so no TIME is needed. A counter that is negative,
-- above 2^40 or whose TTL is longer than the window was not written by a
-- limiter: the increment is undone and the key reported.
--
-- A resend of this script after its reply was lost counts the request
-- again (a counter cannot tell one request from another; see the package
-- doc, Retries): the limiter is then stricter, never looser.

local n = pcall_('INCRBY', key, ARGV[1])
if type(n) == 'table' then return {'corrupt', KI, 'not an integer counter'} end
if n < cost or n - cost > MAX_COUNT then
  call('DECRBY', key, ARGV[1])
  return {'corrupt', KI, 'counter out of range'}
end
local ttl
if n == cost then
  ttl = PMS
  call('PEXPIRE', key, PMS_S)
else
  ttl = call('PTTL', key)
  if ttl < 0 then
    ttl = PMS
    call('PEXPIRE', key, PMS_S)
  elseif ttl > PMS then
    call('DECRBY', key, ARGV[1])
    return {'corrupt', KI, 'TTL longer than the window'}
  end
end
if n > RATE then
  call('DECRBY', key, ARGV[1])
  local rem = RATE - n + cost
  if rem < 0 then rem = 0 end
  return fmt('limit %d %d %d', rem, ttl * 1000, ttl * 1000)
end
return fmt('ok %d 0 %d', RATE - n, ttl * 1000)
