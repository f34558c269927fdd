-- renew.lua: move a live session to a new ID and end the old one (uses
-- lib.lua).
--
-- KEYS[1] old session hash  session:user:{user_id}:{session_id}
-- KEYS[2] user index        session:index:{user_id}
-- KEYS[3] new session hash  session:user:{user_id}:{new_session_id}
-- ARGV[1] old session ID
-- ARGV[2] new session ID (the digest of a secret this request drew)
-- ARGV[3] idle timeout, ms
-- ARGV[4] hex SHA-256 of the new refresh token (drawn by this request)
-- ARGV[5] how many retired refresh hashes to remember
-- ARGV[6] user ID (the session's user_id must be it)
-- KEYS[4] events stream   session:events:{slot}, with events only
-- KEYS[5] sweep schedule  session:due:{slot}, with events only
-- ARGV[#ARGV-2 .. #ARGV], with events only: user ID, events stream
--         length, index grace (ms) (lib.lua's events):
--         "revoked" for the old ID, "created" for the new one
--
-- Returns {'ok', now_ms, expiry_ms, {field, value, ...}} with the renamed,
-- slid hash; {'none'} when the old session is not live; {'corrupt', i, why}
-- when KEYS[i] holds data this package did not write, the old hash
-- included when the Go side would refuse it (lib.lua's session_bad):
-- nothing is written then.
--
-- One script: the hash is RENAMEd (its fields, the refresh digest and
-- history, its absolute_expiry go with it), the old index entry is
-- removed and the new one added, so no reader ever sees both IDs live,
-- nor neither. The old refresh digest joins refresh_token_used (a copy
-- of the old refresh token presented later is reuse, and revokes the
-- renewed session) and the new one becomes current. A hash already at
-- KEYS[3] whose refresh digest is ARGV[4] is this same request sent
-- again (its first reply lost): it reports the renewed session, or
-- {'none'} when that has ended since.
local old, idx, new = KEYS[1], KEYS[2], KEYS[3]
events(4)
local sid, nsid, idle, fresh, keep = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])
local now = now_ms()
if redis.call('EXISTS', new) == 1 then
  if redis.call('HGET', new, 'refresh_token_hash') ~= fresh then
    return {'corrupt', 3, 'a new session ID is taken by a hash this request did not write'}
  end
  local score = tonumber(redis.call('ZSCORE', idx, nsid))
  if not score or score <= now then return {'none'} end
  return {'ok', now, score, redis.call('HGETALL', new)}
end
-- Every read and check in live's check, before its prune: a hash the Go
-- side would refuse (session_bad) or refresh digests that are not ours
-- fail the call with nothing written.
local cur, list
local abs, fail = live(old, idx, sid, now, function(n, v)
  local why = session_bad(ARGV[6], n, v[2], v[3], v[4])
  if why then return {'corrupt', 1, why} end
  local bad
  cur, list, bad = refresh_state(old)
  if bad then return bad end
end)
if fail then return fail end
if not abs then return {'none'} end
if cur ~= '' then list[#list + 1] = cur end
while #list > keep do table.remove(list, 1) end
emit('revoked', sid, int_str(now), 'renew')
emit('created', nsid, int_str(now), 'renew')
redis.call('RENAME', old, new)
redis.call('ZREM', idx, sid)
if #list > 0 then
  redis.call('HSET', new, 'refresh_token_hash', fresh, 'refresh_token_used', table.concat(list, ' '))
else
  redis.call('HSET', new, 'refresh_token_hash', fresh)
end
local exp = slide(new, idx, nsid, now, idle, abs)
return {'ok', now, exp, redis.call('HGETALL', new)}
