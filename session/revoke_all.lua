-- revoke_all.lua: end every session of a user, or every one but one.
--
-- KEYS[1] user index     session:index:{user_id}
-- ARGV[1] session ID to keep, or '' for none
--
-- Returns the number of live sessions revoked. Revoked sessions leave the
-- index, which every operation checks, so they are dead at once; their
-- hashes are deleted by the next operation that names them or expire with
-- their idle TTL.
local idx, keep = KEYS[1], ARGV[1]
local now = now_ms()
redis.call('ZREMRANGEBYSCORE', idx, '-inf', now)
local n = redis.call('ZCARD', idx)
local score = nil
if keep ~= '' then score = redis.call('ZSCORE', idx, keep) end
redis.call('DEL', idx)
if score then
  redis.call('ZADD', idx, score, keep)
  expire_at(idx, tonumber(score), now)
  n = n - 1
end
return n
