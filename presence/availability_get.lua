-- availability_get: an admin's availability, read-only.
-- KEYS[1] admin:{admin_id}:presence (or its tagged twin)  the status word (string)
-- ARGV[1] the longest TTL Set gives, ms
-- Returns {'ok', word}, {'none'} when there is no key, or {'corrupt', 1, why} for a
-- value other than online, away, busy or offline, or a key without a TTL
-- or with a longer one than Set gives (it would never go offline).
local v = redis.call('GET', KEYS[1])
if not v then return {'none'} end
if v ~= 'online' and v ~= 'away' and v ~= 'busy' and v ~= 'offline' then
  return {'corrupt', 1, 'not online, away, busy or offline'}
end
local left = redis.call('PTTL', KEYS[1])
if left < 0 or left > tonumber(ARGV[1]) then
  return {'corrupt', 1, 'no TTL, or a longer one than availability is kept'}
end
return {'ok', v}
