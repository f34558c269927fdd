-- revoke_all.lua: end every session of a user, or every one but one
-- (uses lib.lua).
--
-- KEYS[1] user index     session:index:{user_id}
-- KEYS[2] request key    session:request:{user_id}:{request_id}
-- ARGV[1] session ID to keep, or '' for none
-- ARGV[2] replay window, ms
-- KEYS[3] events stream   session:events:{slot}, with events only
-- KEYS[4] sweep schedule  session:due:{slot}, with events only
-- ARGV[#ARGV-2 .. #ARGV], with events only: user ID, events stream
--         length, index grace (ms) (lib.lua's events):
--         "revoked" is emitted for each session it ends
--
-- Returns {'ok', number of live sessions revoked}; a count above 0 is recorded
-- at KEYS[2], so the same request sent again within the window reports it
-- (a run that revoked nothing records nothing, and runs again the same
-- way). Revoked sessions leave
-- the index, which every operation checks, so they are dead at once; their
-- hashes are deleted by the next operation that names them or expire with
-- their idle TTL. {'corrupt', i, why} when KEYS[i] holds data this package did
-- not write (nothing written).
local idx, keep = KEYS[1], ARGV[1]
events(3)
local done = replayed(2, 9007199254740991)
if done == false then return {'corrupt', 2, 'not a recorded outcome'} end
if done then return {'ok', done} end
local now = now_ms()
local bad = prune(idx, now)
if bad then return {'corrupt', 1, bad} end
local n = redis.call('ZCARD', idx)
local score = nil
if keep ~= '' then score = redis.call('ZSCORE', idx, keep) end
if EV.key and n > 0 then
  local why, at = keep == '' and 'revoke all' or 'revoke others', int_str(now)
  for _, id in ipairs(redis.call('ZRANGE', idx, '0', '-1')) do
    if id ~= keep or not score then emit('revoked', id, at, why) end
  end
end
redis.call('DEL', idx)
if score then
  redis.call('ZADD', idx, score, keep)
  expire_at(idx, tonumber(score) + EV.grace, now)
  n = n - 1
end
if n > 0 then remember(2, n, ARGV[2]) end
return {'ok', n}
