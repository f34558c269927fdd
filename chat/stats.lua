-- stats.lua: an admin's numbers of the current UTC day (after guard.lua),
-- in chat:{tag}:admin:stats:{admin_id} (HASH): day (days since the Unix
-- epoch), resolved (conversations resolved that day), rt_sum (ms of
-- response times) and rt_n (responses timed). A day other than today
-- counts as zeros; the next write starts the new day.

-- read_stats returns KEYS[k]'s numbers of today (server time now, ms).
local function read_stats(k, now)
  local v = rc(k, 'HMGET', 'day', 'resolved', 'rt_sum', 'rt_n')
  local today = math.floor(now / 86400000)
  local s = {k = k, today = today, resolved = 0, rt_sum = 0, rt_n = 0}
  if v[1] then
    local d = to_int(v[1], 0, today + 1)
    if not d then bad(k, 'day is not a UTC day number') end
    if d == today then
      s.resolved, s.rt_sum, s.rt_n = to_int(v[2], 0), to_int(v[3], 0), to_int(v[4], 0)
      if not s.resolved or not s.rt_sum or not s.rt_n then
        bad(k, 'resolved, rt_sum or rt_n is not a count')
      end
    end
  end
  return s
end

-- save_stats writes s back and keeps the hash STATS_MS.
local function save_stats(s)
  rc(s.k, 'HSET', 'day', int_str(s.today), 'resolved', int_str(s.resolved),
    'rt_sum', int_str(s.rt_sum), 'rt_n', int_str(s.rt_n))
  redis.call('PEXPIRE', KEYS[s.k], STATS_MS)
end
