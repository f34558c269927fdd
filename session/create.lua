-- create.lua: write a new session hash and list it in the user's index.
--
-- KEYS[1] session hash   session:user:{user_id}:{session_id}
-- KEYS[2] user index     session:index:{user_id}
-- ARGV[1] session ID
-- ARGV[2] idle timeout, ms (> 0)
-- ARGV[3] absolute lifetime, ms (>= idle)
-- ARGV[4] max sessions per user (0 = unlimited)
-- ARGV[5..] field, value pairs (user_id, email, ..., refresh_token_hash,
--           caller extras); created_at, last_activity and absolute_expiry
--           are written here from server time.
--
-- Returns {now_ms, expiry_ms, absolute_expiry_ms, evicted} or the status
-- 'exists' when the session ID is taken (nothing written).
local key, idx = KEYS[1], KEYS[2]
local sid = ARGV[1]
local idle, life, max = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if redis.call('EXISTS', key) == 1 then
  return {'exists'}
end
local now = now_ms()
local abs = now + life
local exp = now + idle
if exp > abs then exp = abs end
local fields = {}
for i = 5, #ARGV do fields[#fields + 1] = ARGV[i] end
local ts = rfc3339(now)
fields[#fields + 1] = 'created_at'; fields[#fields + 1] = ts
fields[#fields + 1] = 'last_activity'; fields[#fields + 1] = ts
fields[#fields + 1] = 'absolute_expiry'; fields[#fields + 1] = tostring(abs)
redis.call('HSET', key, unpack(fields))
expire_at(key, exp, now)
redis.call('ZREMRANGEBYSCORE', idx, '-inf', now)
redis.call('ZADD', idx, exp, sid)
local evicted = 0
if max > 0 then
  local extra = redis.call('ZCARD', idx) - max
  if extra > 0 then
    -- Evict the sessions that would expire first (least recently active),
    -- never the one just created. Their hashes are unreachable from now on
    -- and removed by the next operation that names them or by their TTL.
    local oldest = redis.call('ZRANGE', idx, 0, extra)
    for _, id in ipairs(oldest) do
      if evicted < extra and id ~= sid then
        redis.call('ZREM', idx, id)
        evicted = evicted + 1
      end
    end
  end
end
fix_index(idx, now)
return {now, exp, abs, evicted}
