-- summary_read: the summary of a conversation and the evicted messages
-- waiting for the summarizer.
-- KEYS[1] conversation meta   ai:memory:conv-meta:{user_id}:{conversation_id}
-- KEYS[2] evicted, pending    ai:memory:conv-evicted:{user_id}:{conversation_id}
-- ARGV[1] most pending messages to return
-- Returns {'ok', version, summary or false, summary tokens, covered, lost,
-- pending, messages oldest first, epoch or false}, {'corrupt', 1, why}
-- when a field is not a count. The version and the epoch (see append.lua)
-- go back to summary_store.lua.
local f = redis.call('HMGET', KEYS[1], 'version', 'summary', 'summary_tokens', 'covered', 'lost', 'epoch')
local v, st = to_int(f[1] or '0', 0), to_int(f[3] or '0', 0)
local covered, lost = to_int(f[4] or '0', 0), to_int(f[5] or '0', 0)
if not v or not st or not covered or not lost then
  return {'corrupt', 1, 'version, summary_tokens, covered or lost is not a count'}
end
local pending = redis.call('LLEN', KEYS[2])
local items = {}
if pending > 0 then
  items = redis.call('LRANGE', KEYS[2], '0', tonumber(ARGV[1]) - 1)
end
return {'ok', v, f[2] or false, st, covered, lost, pending, items, f[6] or false}
