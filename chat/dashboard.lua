-- dashboard: an admin's dashboard, served from its cache while the cache
-- lives, else computed, cached and returned (lib.lua's guard and
-- read_stats).
-- Running in one script, the computation happens once across instances:
-- concurrent calls find the hash the first one wrote.
-- KEYS[1] chat:{tag}:admin:dashboard:{admin_id}  HASH  the cache
-- KEYS[2] chat:{tag}:conversations:active        ZSET
-- KEYS[3] chat:{tag}:conversations:unread        ZSET
-- KEYS[4] admin:{tag}:{admin_id}:assignments     SET
-- KEYS[5] chat:{tag}:admin:stats:{admin_id}      HASH
-- ARGV[1] conversation TTL, ms
-- ARGV[2] dashboard TTL, ms
-- ARGV[3] MAX_CAPACITY, the largest capacity (an assignments set
--         holds at most that many)
-- ARGV[4] '1' when another writer shares the cache (WithoutTag: the
--         home-automation backend writes it without computed_at), else '0'
-- Returns {'ok', 1 when served from the cache else 0, total_active,
-- assigned_to_me, unread_count, avg_response_time, resolved_today,
-- computed_at}, the cached fields as they are stored (false when
-- missing), or {'corrupt', i, why}.
return guarded(function()
  local h = rc(1, 'HMGET', 'total_active', 'assigned_to_me', 'unread_count', 'avg_response_time',
    'resolved_today', 'computed_at')
  -- a cache without computed_at is the other writer's: computed again
  -- (replaced); otherwise any field makes it a cache of this package's
  local theirs = ARGV[4] == '1' and not h[6]
  for j = 1, 6 do
    if h[j] and not theirs then
      for x = 1, 6 do h[x] = h[x] or false end
      return {'ok', 1, unpack(h)}
    end
  end
  local now = now_ms()
  local floor = now - tonumber(ARGV[1])
  local total = rc(2, 'ZCOUNT', '(' .. int_str(floor), '+inf')
  if rc(4, 'SCARD') > tonumber(ARGV[3]) then bad(4, 'more members than any capacity') end
  rc(3, 'ZCARD')
  local mine, unread = 0, 0
  for _, conv in ipairs(rc(4, 'SMEMBERS')) do
    local a = tonumber(redis.call('ZSCORE', KEYS[2], conv))
    if a and a > floor then
      mine = mine + 1
      if redis.call('ZSCORE', KEYS[3], conv) then unread = unread + 1 end
    end
  end
  local s = read_stats(5, now)
  local avg = '0.0'
  if s.rt_n > 0 then avg = string.format('%.1f', s.rt_sum / s.rt_n / 60000) end
  -- The other writer's cache is replaced only now, after every read
  -- and check: a corrupt key ends the script with it as it was.
  if theirs then rc(1, 'DEL') end
  rc(1, 'HSET', 'total_active', int_str(total), 'assigned_to_me', int_str(mine), 'unread_count', int_str(unread),
    'avg_response_time', avg, 'resolved_today', int_str(s.resolved), 'computed_at', int_str(now))
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {'ok', 0, int_str(total), int_str(mine), int_str(unread), avg, int_str(s.resolved), int_str(now)}
end)
