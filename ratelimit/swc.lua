-- swc.lua: SlidingCounter, one rule (appended to single.lua, which lists
-- KEYS, ARGV and the reply). The state key holds "bucket:count:previous"
-- (bucket = server µs / period), with a TTL until both buckets have left
-- the window. Written only when the request is admitted. A bucket more
-- than one ahead of server time, or a count above 2^40, was not written by
-- a limiter and is reported.
--
-- A resend of this script after its reply was lost counts the request
-- again (see the package doc, Retries): stricter, never looser.

local now = now_us()
local v = pcall_('GET', key)
if type(v) == 'table' then return {'corrupt', KI, 'not a string (wrong type)'} end
local idx = floor(now / P)
local cur, prev = 0, 0
if v then
  local w, c1, p1 = string.match(v, '^(%d+):(%d+):(%d+)$')
  if not w or #v > 50 then return {'corrupt', KI, 'not bucket:count:previous'} end
  w, c1, p1 = tonumber(w), tonumber(c1), tonumber(p1)
  if w > idx + 1 or c1 > MAX_COUNT or p1 > MAX_COUNT then return {'corrupt', KI, 'bucket or count out of range'} end
  if w >= idx then idx, cur, prev = w, c1, p1
  elseif w == idx - 1 then prev = c1 end
end
local start = idx * P
local frac = (now - start) / P
if frac < 0 then frac = 0 end
local av = floor(RATE - prev * (1 - frac) - cur + 1e-9)
if av < cost then
  local at
  if cur + cost <= RATE then at = start + P * (1 - (RATE - cur - cost) / prev)
  else at = start + P + P * (1 - (RATE - cost) / cur) end
  local rt = ceil(at - now - 1e-6)
  if rt < 1 then rt = 1 end
  local rs = 0
  if cur > 0 then rs = start + 2 * P - now
  elseif prev > 0 then rs = start + P - now end
  if av < 0 then av = 0 end
  return fmt('limit %d %d %d', av, rt, rs)
end
local rs = start + 2 * P - now
call('SET', key, string.format('%d:%d:%d', idx, cur + cost, prev), 'PX', int_str(ceil(rs / 1000)))
return fmt('ok %d 0 %d', av - cost, rs)
