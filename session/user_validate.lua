-- user_validate.lua: check a user record and record the request.
--
-- KEYS[1] user record   user:{user_id}
-- ARGV[1] TTL, ms
--
-- Returns {field, value, ...} of the record after setting last_seen to the
-- server time (Unix ms) and the TTL to ARGV[1] -- for a blocked user too,
-- so that a blocked user who keeps trying stays blocked. Returns nil when
-- there is no record, and the status 'corrupt' (nothing written) when the
-- status field is not login, anonymous or blocked.
local r = user_touch(KEYS[1], ARGV[1])
if r == 'missing' then return nil end
if r == 'corrupt' then return {'corrupt'} end
return r
