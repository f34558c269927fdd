-- availability_get: an admin's availability, read-only.
-- KEYS[1] admin:{admin_id}:presence (or its tagged twin)  the status word (string)
-- ARGV[1] the longest TTL Set gives, ms
-- ARGV[2] '1' when another writer shares the key (WithOtherWriters): a key
--         without a TTL is that writer's word, '0' when it is corrupt
-- Returns {'ok', word}, {'none'} when there is no key, or {'corrupt', 1, why} for a
-- value other than online, away, busy or offline, or a key with a longer
-- TTL than Set gives, or without one unless ARGV[2] says another writer
-- shares the key (it would never go offline).
local v = redis.call('GET', KEYS[1])
if not v then return {'none'} end
if v ~= 'online' and v ~= 'away' and v ~= 'busy' and v ~= 'offline' then
  return {'corrupt', 1, 'not online, away, busy or offline'}
end
local left = redis.call('PTTL', KEYS[1])
if left == -1 and ARGV[2] == '1' then return {'ok', v} end
if left < 0 or left > tonumber(ARGV[1]) then
  return {'corrupt', 1, 'no TTL, or a longer one than availability is kept'}
end
return {'ok', v}
