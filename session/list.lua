-- list.lua: the live sessions of a user, pruning dead index entries
-- (uses lib.lua).
--
-- KEYS[1] user index     session:index:{user_id}
-- KEYS[2] events stream   session:events:{slot}, with events only
-- KEYS[3] sweep schedule  session:due:{slot}, with events only
-- ARGV[#ARGV-2 .. #ARGV], with events only: user ID, events stream
--         length, index grace (ms) (lib.lua's events)
--
-- Returns {'ok', {session_id, expiry_ms, ...}} ordered by expiry, soonest
-- first, each expiry in decimal digits (whatever form the server prints
-- a score in); {'corrupt', 1, why} when an entry is not one this package
-- writes (a member that is not a session ID, a score that is not a
-- deadline; nothing is written then).
local idx = KEYS[1]
events(2)
local now = now_ms()
-- the entries that stay (scored after now) are read and checked before
-- the prune drops the others: a corrupt index fails with nothing written
local bad = prune(idx, now, true)
if bad then return {'corrupt', 1, bad} end
local all = redis.call('ZRANGEBYSCORE', idx, '(' .. int_str(now), '+inf', 'WITHSCORES')
for i = 1, #all, 2 do
  if #all[i] ~= 22 or string.find(all[i], '[^%w_%-]') then
    return {'corrupt', 1, 'entry ' .. ((i + 1) / 2) .. ' is not a session ID'}
  end
  local n = score_ms(all[i + 1])
  if not n then
    return {'corrupt', 1, 'entry ' .. ((i + 1) / 2) .. ' has a score that is not Unix ms'}
  end
  all[i + 1] = int_str(n)
end
expire_due(idx, now)
return {'ok', all}
