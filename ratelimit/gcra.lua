-- gcra.lua: GCRA, one rule (appended to single.lua, which lists KEYS, ARGV
-- and the reply). The state key holds the theoretical arrival time (TAT) in
-- server µs as an integer string, with a TTL of the time until the bucket
-- is full again. Written only when the request is admitted.

local t = call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local v = pcall_('GET', key)
if type(v) == 'table' then return {-1, KI, 0, 0} end
local T = P / RATE -- emission interval, µs
local tat = now
if v then
  -- strictly µs since the epoch as written here: digits only (no sign,
  -- exponent, hex, inf or nan), at most 17 of them
  if #v > 17 or not string.match(v, '^%d+$') then return {-1, KI, 0, 0} end
  local x = tonumber(v)
  if x > now then tat = x end
end
local av = floor(CAP - (tat - now) / T + 1e-9)
if av < cost then
  local rt = ceil(tat - now - (CAP - cost) * T - 1e-6)
  if rt < 1 then rt = 1 end
  if av < 0 then av = 0 end
  return {0, av, rt, ceil(tat - now - 1e-6)}
end
local nt = ceil(tat + cost * T - 1e-6)
local rs = ceil(nt - now - 1e-6)
if rs < 1 then rs = 1 end
call('SET', key, fmt('%.0f', nt), 'PX', ceil(rs / 1000))
return {1, av - cost, 0, rs}
