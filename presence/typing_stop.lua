-- typing_stop: clear a user's typing indicator in a conversation. Uses
-- lib.lua (its request memos).
-- KEYS[1] typing:{conversation_id}:{user_id}        typing JSON (string)
-- KEYS[2] typers:{conversation_id}                  typing JSON values by expiry ms (zset)
-- KEYS[3] typing:requests:{conversation_id}:{user_id} request memo
--         (typers:requests:... with WithOtherWriters)
-- ARGV[1] request ID, 16 hex digits
-- ARGV[2] replay window, ms
-- Returns {'ok', 1} when an indicator was cleared, {'ok', 0} when there was none,
-- or {'corrupt', i, why}; a replay returns the first run's reply (and clears
-- nothing a later StartTyping wrote).
local rec = replayed(KEYS[3], ARGV[1])
if rec == false then return {'corrupt', 3, REPLAY_CORRUPT} end
if rec then return rec end
local now = now_ms()
local v = redis.call('GET', KEYS[1])
if not v then return remember(KEYS[3], ARGV[1], {'ok', 0}, now, ARGV[2]) end
redis.call('ZREM', KEYS[2], v)
redis.call('DEL', KEYS[1])
return remember(KEYS[3], ARGV[1], {'ok', 1}, now, ARGV[2])
