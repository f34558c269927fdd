-- user_validate.lua: check a user record and record the request (uses
-- lib.lua's user_touch).
--
-- KEYS[1] user record   user:{user_id}
-- ARGV[1] TTL, ms
--
-- Returns {'ok', {field, value, ...}} of the record after setting last_seen to
-- the server time (Unix ms) and the TTL to ARGV[1] -- for a blocked user
-- too, so that a blocked user who keeps trying stays blocked; {'none'} when
-- there is no record; {'corrupt', 1, why} (nothing written) when the record is
-- not one this package writes.
local r, why = user_touch(KEYS[1], ARGV[1], now_ms())
if r == 'missing' then return {'none'} end
if r == false then return {'corrupt', 1, why} end
return {'ok', r}
