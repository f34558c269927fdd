-- blacklist.lua: record a revoked JWT until it would have expired anyway.
--
-- KEYS[1] blacklist entry  session:blacklist:{token_jti}
-- ARGV[1] the token's expiry, Unix ms
-- ARGV[2] the furthest ahead an expiry may lie, ms
--
-- Returns {'ok', 1} when the token is blacklisted: written now ("1" with PXAT
-- = expiry) or already (a resent request, or the token revoked before:
-- nothing written); {'ok', 0} when the token has already expired by the
-- server clock (nothing written); {'invalid', why} when the expiry lies more
-- than ARGV[2] ahead; {'corrupt', 1, why} when the entry holds anything but
-- "1".
local at = tonumber(ARGV[1])
local v = redis.call('GET', KEYS[1])
if v then
  if v ~= '1' then return {'corrupt', 1, 'not "1"'} end
  return {'ok', 1}
end
local now = now_ms()
if at <= now then return {'ok', 0} end
if at > now + tonumber(ARGV[2]) then
  return {'invalid', 'the expiry lies more than ' .. ARGV[2] .. 'ms ahead of the server clock'}
end
redis.call('SET', KEYS[1], '1', 'PXAT', ARGV[1])
return {'ok', 1}
