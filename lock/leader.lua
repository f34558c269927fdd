-- leader: read who holds an election's lease.
-- KEYS[1] lock key          lock:{resource_type}:{resource_id}
-- KEYS[2] fence key         lock:fence:{resource_type}:{resource_id}
-- ARGV: none
-- Returns {'ok', value, remaining lease ms, fence} when held, {'none'} when
-- not. The fence is the last token issued for the resource: the holder's,
-- since only an acquisition issues one. A fence that is not a token reads
-- as 0 (the lease, not the fence, says who leads).
local v = redis.call('GET', KEYS[1])
if not v then
  return {'none'}
end
local pttl = redis.call('PTTL', KEYS[1])
if pttl < 0 then
  return {'corrupt', 1, 'lease lock without a TTL'}
end
local tok = redis.call('GET', KEYS[2])
tok = tok and #tok <= 16 and string.find(tok, '^%d+$') and tonumber(tok) or 0
return {'ok', v, pttl, tok}
