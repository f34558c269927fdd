-- gcra.lua: GCRA, one rule (appended to single.lua, which lists KEYS, ARGV
-- and the reply). The state key holds the theoretical arrival time (TAT)
-- in server µs as an integer string, with a TTL of the time until the
-- bucket is full again. Written only when the request is admitted. A TAT
-- further ahead than the key's TTL allows (or one without a TTL) was not
-- written by a limiter and is reported; the TTL is read only when the TAT
-- is further ahead than this rule could put it.
--
-- A resend of this script after its reply was lost counts the request
-- again (see the package doc, Retries): stricter, never looser.

local now = now_us()
local v = pcall_('GET', key)
if type(v) == 'table' then return {'corrupt', KI, 'not a string (wrong type)'} end
local T = P / RATE -- emission interval, µs
local tat = now
if v then
  -- strictly µs since the epoch as written here: digits only, at most 17
  if #v > 17 or not string.match(v, '^%d+$') then return {'corrupt', KI, 'not a time in µs'} end
  local x = tonumber(v)
  if x > now then
    if x - now > CAP * T + 1 then
      -- further ahead than this rule writes: another limiter's (a larger
      -- burst) only if the TTL covers it, as every writer sets it
      local ttl = call('PTTL', key)
      if ttl < 0 or x - now > ttl * 1000 + 1000 then return {'corrupt', KI, 'time ahead of the key\'s TTL'} end
    end
    tat = x
  end
end
local av = floor(CAP - (tat - now) / T + 1e-9)
if av < cost then
  local rt = ceil(tat - now - (CAP - cost) * T - 1e-6)
  if rt < 1 then rt = 1 end
  if av < 0 then av = 0 end
  return fmt('limit %d %d %d', av, rt, ceil(tat - now - 1e-6))
end
local nt = ceil(tat + cost * T - 1e-6)
local rs = ceil(nt - now - 1e-6)
if rs < 1 then rs = 1 end
call('SET', key, int_str(nt), 'PX', int_str(ceil(rs / 1000)))
return fmt('ok %d 0 %d', av - cost, rs)
