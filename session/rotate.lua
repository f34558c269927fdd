-- rotate.lua: replace a session's refresh token, detecting reuse and
-- answering a retry of the last rotation (uses lib.lua).
--
-- KEYS[1] session hash   session:user:{user_id}:{session_id}
-- KEYS[2] user index     session:index:{user_id}
-- KEYS[3] request key    session:request:{user_id}:{request_id}
-- KEYS[4] rotation key   session:rotation:{user_id}:{session_id}
-- ARGV[1] session ID
-- ARGV[2] hex SHA-256 of the presented token
-- ARGV[3] hex SHA-256 of the new token (drawn by this request)
-- ARGV[4] how many retired hashes to remember
-- ARGV[5] replay window, ms
-- ARGV[6] the new token sealed under a key derived from the presented
--         one (hex; the Go side seals and opens it, Redis never sees a
--         token)
-- ARGV[7] rotation grace, ms (0: none)
-- KEYS[5] events stream   session:events:{slot}, with events only
-- KEYS[6] sweep schedule  session:due:{slot}, with events only
-- ARGV[#ARGV-2 .. #ARGV], with events only: user ID, events stream
--         length, index grace (ms) (lib.lua's events):
--         "revoked" for a session ended on a reused token
--
-- Returns {'ok'} (rotated; the presented hash joins refresh_token_used and,
-- with a grace, KEYS[4] holds "<presented> <new> <sealed>" for the grace),
-- {'ok', sealed} (the presented token is the one the last rotation retired,
-- within its grace, and the token it made is still current: a retry by a
-- client that never saw that rotation's reply; sealed opens, with the
-- presented token, to that same new token; nothing changes),
-- {'ok', '', 'reused'} (the presented token was already rotated away: the
-- session is revoked; status ok, as a write that WithDurability waits
-- for), {'conflict', 'mismatch'} (no match; nothing changed),
-- {'none'} when the session is not live, or {'corrupt', i, why}. When the
-- current hash is already ARGV[3], this same request was sent twice (its
-- first reply lost): only it knows the new token, so it reports {'ok'} again
-- and changes nothing. A run that finds a reuse records it at KEYS[3] for
-- the replay window, so that the same request sent again reports the
-- reuse too, not a session that is merely gone. Hashes are compared in
-- constant time.

-- ct_eq compares two strings in time that depends only on their lengths.
local function ct_eq(a, b)
  if #a ~= #b then return false end
  local diff = 0
  for i = 1, #a do
    diff = diff + math.abs(string.byte(a, i) - string.byte(b, i))
  end
  return diff == 0
end

local key, idx, rot, sid = KEYS[1], KEYS[2], KEYS[4], ARGV[1]
events(5)
local presented, fresh, keep = ARGV[2], ARGV[3], tonumber(ARGV[4])
local sealed, grace = ARGV[6], tonumber(ARGV[7])
local done = replayed(3, 1)
if done == false then return {'corrupt', 3, 'not a recorded outcome'} end
if done == 1 then return {'ok', '', 'reused'} end
local now = now_ms()
-- Every read and check in live's check, before its prune: a corrupt hash
-- or rotation record fails the call with nothing written.
local cur, list, rec
local abs, fail = live(key, idx, sid, now, function()
  local bad
  cur, list, bad = refresh_state(key)
  if bad then return bad end
  if cur ~= '' and (ct_eq(cur, fresh) or ct_eq(cur, presented)) then return end
  rec = redis.call('GET', rot)
  if rec then
    local old, new, box = string.match(rec, '^(%x+) (%x+) (%x+)$')
    if not old or #old ~= 64 or #new ~= 64 or #box > 1024 or string.find(rec, '[^0-9a-f ]') then
      return {'corrupt', 4, 'not a rotation record'}
    end
    rec = {old, new, box}
  end
end)
if fail then return fail end
if not abs then return {'none'} end
if cur ~= '' and ct_eq(cur, fresh) then
  return 'ok'
end
if cur ~= '' and ct_eq(cur, presented) then
  list[#list + 1] = cur
  while #list > keep do table.remove(list, 1) end
  redis.call('HSET', key, 'refresh_token_hash', fresh, 'refresh_token_used', table.concat(list, ' '))
  if grace > 0 then
    redis.call('SET', rot, presented .. ' ' .. fresh .. ' ' .. sealed, 'PX', ARGV[7])
  else
    redis.call('DEL', rot)
  end
  return 'ok'
end
if rec and cur ~= '' and ct_eq(rec[1], presented) and ct_eq(rec[2], cur) then
  return {'ok', rec[3]}
end
local reused = false
for _, w in ipairs(list) do
  if ct_eq(w, presented) then reused = true end
end
if reused then
  emit('revoked', sid, int_str(now), 'refresh token reused')
  redis.call('DEL', key, rot)
  redis.call('ZREM', idx, sid)
  index_ttl(idx, now)
  remember(3, 1, ARGV[5])
  return {'ok', '', 'reused'}
end
return {'conflict', 'mismatch'}
