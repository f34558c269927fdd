-- queue: the head of a conversation queue, without expired
-- conversations, read-only (lib.lua's guard).
-- KEYS[1] chat:{tag}:conversations:unread or :backlog (ZSET, scored by
--         priority then age), or :active (ZSET, scored by last activity)
-- KEYS[2] chat:{tag}:conversations:active
-- KEYS[3] chat:{tag}:conversations:state (HASH, conversation ID -> state)
-- ARGV[1] conversation TTL, ms
-- ARGV[2] at most this many entries
-- ARGV[3] 'queue' (highest score first, skipping conversations whose
--         activity is older than the TTL, and members without a state:
--         another writer's, such as the home-automation backend's ZADD,
--         scored by a formula this package does not read, and removed by
--         the next routing call that meets them) or 'active' (latest first)
-- Returns {'ok', conversation IDs, their scores as stored}, or {'corrupt', i, why};
-- an activity time is in decimal digits (miniredis prints a round score
-- in exponent form).
return guarded(function()
  local floor = now_ms() - tonumber(ARGV[1])
  local n = tonumber(ARGV[2])
  local ids, scores = {}, {}
  if ARGV[3] == 'active' then
    local r = rc(1, 'ZREVRANGEBYSCORE', '+inf', '(' .. int_str(floor), 'WITHSCORES', 'LIMIT', 0, n)
    for j = 1, #r, 2 do
      ids[#ids + 1] = r[j]
      scores[#scores + 1] = score_digits(r[j + 1])
    end
    return {'ok', ids, scores}
  end
  rc(2, 'ZCARD')
  local pos = 0
  while #ids < n and pos < 4 * n + 1000 do
    local r = rc(1, 'ZREVRANGE', pos, pos + n - 1, 'WITHSCORES')
    if #r == 0 then break end
    for j = 1, #r, 2 do
      local a = tonumber(redis.call('ZSCORE', KEYS[2], r[j]))
      if a and a > floor and #ids < n and redis.call('HEXISTS', KEYS[3], r[j]) == 1 then
        ids[#ids + 1] = r[j]
        scores[#scores + 1] = r[j + 1]
      end
    end
    pos = pos + n
  end
  return {'ok', ids, scores}
end)
