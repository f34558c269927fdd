-- blacklist.lua: record a revoked JWT until it would have expired anyway.
--
-- KEYS[1] blacklist entry  session:blacklist:{token_jti}
-- ARGV[1] the token's expiry, Unix ms
--
-- Returns 1 when written ("1" with PXAT = expiry), 0 when the token has
-- already expired by the server clock (nothing written).
local at = tonumber(ARGV[1])
if at <= now_ms() then return 0 end
redis.call('SET', KEYS[1], '1', 'PXAT', at)
return 1
