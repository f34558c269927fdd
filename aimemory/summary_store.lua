-- summary_store: replace a conversation's summary by one that folds in
-- the first pending evicted messages, if nobody changed it meanwhile.
-- KEYS[1] conversation        ai:memory:conv:{user_id}:{conversation_id}
-- KEYS[2] conversation meta   ai:memory:conv-meta:{user_id}:{conversation_id}
-- KEYS[3] evicted, pending    ai:memory:conv-evicted:{user_id}:{conversation_id}
-- ARGV[1] the version the summary was read at
-- ARGV[2] how many pending messages it folds in (the first ones)
-- ARGV[3] the new summary
-- ARGV[4] its tokens
-- ARGV[5] request ID, new for each store
-- ARGV[6] the epoch the summary was read at ('' when there was none)
-- Returns {'ok', new version, pending left}, {'conflict', version} when the
-- summary or the pending list changed since it was read (another
-- summarizer stored first, or an append dropped pending messages) or the
-- conversation is another one (deleted and begun again: the version
-- starts at 0 again, the epoch append.lua sets differs), {'none'}
-- when the conversation is gone (expired or deleted), {'corrupt', i, why}.
-- A replay finds its request ID and reports ok again. The meta and
-- pending keys get the conversation's remaining TTL.
local f = redis.call('HMGET', KEYS[2], 'version', 'sid', 'covered', 'epoch')
local v, covered = to_int(f[1] or '0', 0), to_int(f[3] or '0', 0)
if not v or not covered then
  return {'corrupt', 2, 'version or covered is not a count'}
end
if f[2] == ARGV[5] then
  return {'ok', v, redis.call('LLEN', KEYS[3])}
end
if v ~= tonumber(ARGV[1]) or (f[4] or '') ~= ARGV[6] then
  return {'conflict', v}
end
local pttl = redis.call('PTTL', KEYS[1])
if pttl == -1 then
  return {'corrupt', 1, 'conversation without a TTL'}
end
if pttl < 0 then
  return {'none'}
end
local consumed = tonumber(ARGV[2])
local pending = redis.call('LLEN', KEYS[3]) -- a wrong type fails here, before any write
redis.call('HSET', KEYS[2], 'summary', ARGV[3], 'summary_tokens', ARGV[4],
  'covered', int_str(covered + consumed), 'version', int_str(v + 1), 'sid', ARGV[5])
redis.call('LTRIM', KEYS[3], consumed, '-1')
redis.call('PEXPIRE', KEYS[2], pttl)
redis.call('PEXPIRE', KEYS[3], pttl)
return {'ok', v + 1, math.max(pending - consumed, 0)}
