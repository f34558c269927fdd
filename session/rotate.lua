-- rotate.lua: replace a session's refresh token, detecting reuse.
--
-- KEYS[1] session hash   session:user:{user_id}:{session_id}
-- KEYS[2] user index     session:index:{user_id}
-- ARGV[1] session ID
-- ARGV[2] hex SHA-256 of the presented token
-- ARGV[3] hex SHA-256 of the new token
-- ARGV[4] how many retired hashes to remember
--
-- Returns 'ok' (rotated; the presented hash joins refresh_token_used),
-- 'reused' (the presented token was already rotated away: the session is
-- revoked), 'invalid' (no match; nothing changed), nil when the session is
-- not live, or 'corrupt'. Hashes are compared in constant time.
local key, idx, sid = KEYS[1], KEYS[2], ARGV[1]
local presented, fresh, keep = ARGV[2], ARGV[3], tonumber(ARGV[4])
local now = now_ms()
local abs = live(key, idx, sid, now)
if abs == false then return {'corrupt'} end
if not abs then return nil end
local cur = redis.call('HGET', key, 'refresh_token_hash') or ''
local used = redis.call('HGET', key, 'refresh_token_used') or ''
if cur ~= '' and ct_eq(cur, presented) then
  local list = {}
  for h in string.gmatch(used, '%S+') do list[#list + 1] = h end
  list[#list + 1] = cur
  while #list > keep do table.remove(list, 1) end
  redis.call('HSET', key, 'refresh_token_hash', fresh, 'refresh_token_used', table.concat(list, ' '))
  return 'ok'
end
local reused = false
for h in string.gmatch(used, '%S+') do
  if ct_eq(h, presented) then reused = true end
end
if reused then
  redis.call('DEL', key)
  redis.call('ZREM', idx, sid)
  fix_index(idx, now)
  return 'reused'
end
return 'invalid'
