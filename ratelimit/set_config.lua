-- set_config.lua: SetConfig(id, c): replace the runtime config fields of
-- one API key. Writing the same fields again changes nothing, so a resend
-- of a call whose reply was lost has the first call's outcome.
--
-- KEYS[1]  config hash  ratelimit:config:{api_key_id}  (HASH, no TTL)
-- ARGV[1..4]  per_minute, per_hour, per_day, burst: a decimal integer in
--             1..2^40 to set, "0" to remove the field (checked in Go)
-- ARGV[5]  channel   the events channel: the change is announced there, so
--                    that every instance's deny cache (WithDenyCache) drops
--                    the refusals it cached under the old config
-- ARGV[6]  payload   the API key ID (the limiter's identifier)
-- Returns {'ok'} once written (a hash without any field is deleted),
-- {'corrupt', 1, why} when KEYS[1] is not a hash (nothing written).

local FIELDS = {'per_minute', 'per_hour', 'per_day', 'burst'}
local t = redis.call('TYPE', KEYS[1]).ok
if t ~= 'hash' and t ~= 'none' then return {'corrupt', 1, 'a ' .. t .. ', not a hash'} end
local set, del = {}, {}
for f = 1, 4 do
  if ARGV[f] == '0' then
    del[#del + 1] = FIELDS[f]
  else
    set[#set + 1] = FIELDS[f]
    set[#set + 1] = ARGV[f]
  end
end
if #set == 0 then
  redis.call('DEL', KEYS[1])
else
  redis.call('HSET', KEYS[1], unpack(set))
  if #del > 0 then redis.call('HDEL', KEYS[1], unpack(del)) end
end
redis.call('PUBLISH', ARGV[5], ARGV[6])
return 'ok'
