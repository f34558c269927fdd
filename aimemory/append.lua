-- append: add messages to a conversation, evict past the cap, refresh
-- every TTL, and account the user's tokens of the day (uses lib.lua).
-- KEYS[1] conversation          ai:memory:conv:{user_id}:{conversation_id}
-- KEYS[2] conversation meta     ai:memory:conv-meta:{user_id}:{conversation_id}
-- KEYS[3] request memo          ai:memory:conv-reqs:{user_id}:{conversation_id}
-- KEYS[4] evicted, pending      ai:memory:conv-evicted:{user_id}:{conversation_id}
-- KEYS[5] user context          ai:memory:user:{user_id}
-- KEYS[6] user's conversations  ai:memory:user-convs:{user_id}
-- ARGV[1..4] the starts (Unix ms) of local days -1, 0, +1 and +2 (lib.lua's today)
-- ARGV[5..7] the dates ("2026-01-16") of local days -1, 0 and +1
-- ARGV[8]  request ID, new for each Append call
-- ARGV[9]  cap (messages)
-- ARGV[10] conversation TTL, ms
-- ARGV[11] user context TTL, ms
-- ARGV[12] daily token budget (0: none)
-- ARGV[13] how many evicted messages to keep for the summarizer (0: drop them)
-- ARGV[14] conversation ID
-- ARGV[15] tokens of the messages
-- ARGV[16] replay window, ms
-- ARGV[17..] the messages (JSON), at most 100
-- Returns {'ok', length, evicted, tokens of the day, replay 0|1, pending},
-- {'limit', tokens of the day, budget} when the budget refuses it,
-- {'none', 'clock', now ms} when the server clock is outside the days passed,
-- {'corrupt', i, why} for a key this package did not write (KEYS[2]'s lost
-- and version must be counts when ARGV[13] > 0). Every check runs before
-- the first write, so a refused or corrupt call writes nothing.
--
-- The first append of a conversation (none in KEYS[1]: a new one, or one
-- deleted or expired and begun again) sets KEYS[2]'s epoch to its request
-- ID; summary_store.lua stores a summary only into the conversation whose
-- epoch it was read with.
--
-- The request memo: go-redis resends a call whose reply was lost, so one
-- append can run twice. Its first run records it in KEYS[3] at its server
-- time (ms) as two members with that score: the request ID, and
-- "<request ID>=<length>,<evicted>,<tokens of the day>,<pending>" (its
-- reply). A second run finds the ID, reads the reply beside it and
-- returns it (replay 1) without appending again. Each append drops the
-- members older than the window and keeps the memo for the window, so a
-- resend is recognised for the window after the first run however many
-- other appends ran meanwhile.
local now = now_ms()
local day, day_end = today(now)
if not day then
  return {'none', 'clock', now}
end
local uf = redis.call('HMGET', KEYS[5], 'tokens_day', 'total_tokens_today')
local total, why = day_total(uf[1], uf[2], day)
if not total then
  return {'corrupt', 5, why}
end
local seen = redis.call('ZSCORE', KEYS[3], ARGV[8])
if seen then
  local pre = ARGV[8] .. '='
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], seen, seen)) do
    if string.sub(m, 1, #pre) == pre then
      local l, e, t, p = string.match(m, '^(%d+),(%d+),(%d+),(%d+)$', #pre + 1)
      if not l then
        break
      end
      return {'ok', tonumber(l), tonumber(e), tonumber(t), 1, tonumber(p)}
    end
  end
  return {'corrupt', 3, 'a request ID without its "<ID>=<length>,<evicted>,<tokens>,<pending>" reply'}
end
local n_old = redis.call('LLEN', KEYS[1])
local add = tonumber(ARGV[15])
local budget = tonumber(ARGV[12])
if budget > 0 and total + add > budget then
  return {'limit', total, budget}
end
redis.call('ZCARD', KEYS[6]) -- a wrong type fails here, before any write
local keep = tonumber(ARGV[13])
local pending, lost, version = 0, 0, 0
if keep > 0 or n_old == 0 then
  -- a wrong type fails here, before any write
  local mf = redis.call('HMGET', KEYS[2], 'lost', 'version')
  if keep > 0 then
    pending = redis.call('LLEN', KEYS[4])
    lost, version = to_int(mf[1] or '0', 0), to_int(mf[2] or '0', 0)
    if not lost or not version then
      return {'corrupt', 2, 'lost or version is not a count'}
    end
  end
end

local msgs = {}
for i = 17, #ARGV do
  msgs[#msgs + 1] = ARGV[i]
end
local n = n_old + #msgs
local cap = tonumber(ARGV[9])
local head, gone, k = nil, {}, 0
if n > cap then
  -- Evict the oldest n - cap messages after a pinned system prompt, and
  -- the tool results that follow an evicted call (never a result without
  -- its call).
  head = redis.call('LINDEX', KEYS[1], '0')
  local hr = role_of(head)
  if not hr then
    return {'corrupt', 1, 'element 0 is not a message'}
  end
  local first = 0
  if hr == 'system' then
    first = 1
  else
    head = nil
  end
  local function at(i)
    if i < n_old then
      return redis.call('LINDEX', KEYS[1], i)
    end
    return msgs[i - n_old + 1]
  end
  k = n - cap
  if first + k - 1 < n_old then
    gone = redis.call('LRANGE', KEYS[1], first, first + k - 1)
  else
    for i = first, first + k - 1 do
      gone[#gone + 1] = at(i)
    end
  end
  while first + k < n do
    local nxt = at(first + k)
    local r = role_of(nxt)
    if not r then
      return {'corrupt', 1, 'element ' .. (first + k) .. ' is not a message'}
    end
    if r ~= 'tool' then
      break
    end
    gone[#gone + 1] = nxt
    k = k + 1
  end
end

-- Writes.
redis.call('RPUSH', KEYS[1], unpack(msgs))
if n_old == 0 then
  -- a new conversation (or one deleted and begun again): a new epoch, so
  -- that a summary read from an older one is never stored into it
  redis.call('HSET', KEYS[2], 'epoch', ARGV[8])
end
if k > 0 then
  if head then
    redis.call('LTRIM', KEYS[1], k + 1, '-1')
    redis.call('LPUSH', KEYS[1], head)
  else
    redis.call('LTRIM', KEYS[1], k, '-1')
  end
  n = n - k
  if keep > 0 then
    batched('RPUSH', KEYS[4], gone)
    pending = pending + #gone
    if pending > keep then
      redis.call('LTRIM', KEYS[4], pending - keep, '-1')
      -- a summarizer that read the pending list before this trim must
      -- not trim it by its count: its store sees another version
      redis.call('HSET', KEYS[2], 'lost', int_str(lost + pending - keep), 'version', int_str(version + 1))
      pending = keep
    end
  end
end
local ttl = tonumber(ARGV[10])
redis.call('PEXPIRE', KEYS[1], ARGV[10])
redis.call('PEXPIRE', KEYS[2], ARGV[10])
if keep > 0 then
  redis.call('PEXPIRE', KEYS[4], ARGV[10])
end
total = total + add
redis.call('HSET', KEYS[5], 'tokens_day', day, 'total_tokens_today', int_str(total), 'last_conversation_id', ARGV[14])
redis.call('PEXPIRE', KEYS[5], int_str(math.max(tonumber(ARGV[11]), day_end - now)))
redis.call('ZADD', KEYS[6], int_str(now + ttl), ARGV[14])
redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', int_str(now))
if redis.call('PTTL', KEYS[6]) < ttl then
  redis.call('PEXPIRE', KEYS[6], ARGV[10])
end
local at = int_str(now)
redis.call('ZADD', KEYS[3], at, ARGV[8], at, ARGV[8] .. '=' .. int_str(n) .. ',' .. int_str(k) .. ',' .. int_str(total) .. ',' .. int_str(pending))
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. int_str(now - tonumber(ARGV[16])))
redis.call('PEXPIRE', KEYS[3], ARGV[16])
return {'ok', n, k, total, 0, pending}
