-- update.lua: change fields of a live session and slide its idle deadline
-- (uses lib.lua). A missing, expired or revoked session is never
-- written (no HSET brings a deleted hash back).
--
-- KEYS[1] session hash   session:user:{user_id}:{session_id}
-- KEYS[2] user index     session:index:{user_id}
-- ARGV[1] session ID
-- ARGV[2] idle timeout, ms
-- ARGV[3] most caller-defined (extra) fields the session may hold
-- ARGV[4] number of fields to delete, n
-- ARGV[5 .. 4+n] fields to delete
-- ARGV[5+n ..] field, value pairs to set
-- KEYS[3] events stream   session:events:{slot}, with events only
-- KEYS[4] sweep schedule  session:due:{slot}, with events only
-- ARGV[#ARGV-2 .. #ARGV], with events only: user ID, events stream
--         length, index grace (ms) (lib.lua's events), after
--         those pairs
--
-- Returns {'ok', expiry_ms}; {'none'} when the session is not live;
-- {'corrupt', i, why} when KEYS[i] holds data this package did not write;
-- {'invalid', why} (nothing written) when the changes would leave more than
-- ARGV[3] extra fields. Sent twice (a reply lost and resent), it writes
-- the same fields again and reports the same.
local key, idx, sid = KEYS[1], KEYS[2], ARGV[1]
local nargs = events(3)
local now = now_ms()
local max, ndel = tonumber(ARGV[3]), tonumber(ARGV[4])
-- The seed's and this package's own fields (fields.go: reserved); every
-- other field is a caller extra.
local reserved = {
  user_id = true, email = true, created_at = true, last_activity = true,
  ip_address = true, user_agent = true, device_fingerprint = true,
  refresh_token_hash = true, absolute_expiry = true, refresh_token_used = true, idle_timeout = true,
}
-- The refusal is live's check: it runs before live() writes anything
-- (its prune), so a refused call writes nothing.
local abs, fail = live(key, idx, sid, now, function()
  local extra, count = {}, 0
  for _, f in ipairs(redis.call('HKEYS', key)) do
    if not reserved[f] then extra[f] = true; count = count + 1 end
  end
  for i = 5, 4 + ndel do
    if extra[ARGV[i]] then extra[ARGV[i]] = nil; count = count - 1 end
  end
  for i = 5 + ndel, nargs, 2 do
    local f = ARGV[i]
    if not reserved[f] and not extra[f] then extra[f] = true; count = count + 1 end
  end
  if count > max then
    return {'invalid', 'the session would hold more than ' .. ARGV[3] .. ' extra fields'}
  end
end)
if fail then return fail end
if not abs then return {'none'} end
if ndel > 0 then
  batched('HDEL', key, ARGV, 5, 4 + ndel)
end
if nargs >= 5 + ndel then
  batched('HSET', key, ARGV, 5 + ndel, nargs)
end
return {'ok', slide(key, idx, sid, now, tonumber(ARGV[2]), abs)}
