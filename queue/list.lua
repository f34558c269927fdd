-- list: jobs in one state, oldest first (pending: by priority, then FIFO).
--
-- KEYS[1] jobs hash      queue:{q}:jobs
-- KEYS[2] state hash     queue:{q}:state
-- KEYS[3] high zset      queue:{q}:priority:high
-- KEYS[4] normal zset    queue:{q}:priority:normal
-- KEYS[5] low zset       queue:{q}:priority:low
-- KEYS[6] active zset    queue:{q}:active
-- KEYS[7] dead list      queue:dlq:{q}
-- KEYS[8] progress hash  queue:{q}:progress
-- KEYS[9] done hash      queue:{q}:done
-- KEYS[10] done index    queue:{q}:done_at
-- KEYS[11] flows hash    queue:{q}:flows ("id" only: a waiting parent)
-- KEYS[12] errors hash   queue:{q}:errors ("id" only: attempt errors)
-- ARGV[1] state: pending | scheduled | active | dead | completed | id
-- ARGV[2] offset (or the job ID when ARGV[1] is "id")
-- ARGV[3] limit
-- Returns {'ok', now_ms, {row, ...}}; a live row is {state, id, state_string,
-- json, score, progress, errors} (state_string "" for a job never delivered,
-- which has no state entry; progress the progress field, or "", read for
-- "id" only), a dead row is {"dead", entry}, a finished job kept by
-- WithRetention {"done", entry} (entries past their expiry are skipped).
-- For "id" at most one row: live (a flow's parent waiting for its
-- children is "waiting", score 0), else finished, else dead.
local now = now_ms()
local maxscore = now * 1000 + 999
local rows = {}
local function row(state, id, score, progress)
  local st = redis.call('HGET', KEYS[2], id)
  local body = redis.call('HGET', KEYS[1], id)
  if body and (st or state ~= 'active') then
    local errs = ARGV[1] == 'id' and redis.call('HGET', KEYS[12], id) or ''
    rows[#rows + 1] = {state, id, st or '', body, int_str(score), progress or '', errs}
  end
end
-- done returns the done hash's entry of id unless it expired, or nil.
local function done(id)
  local exp = redis.call('ZSCORE', KEYS[10], id)
  if exp and tonumber(exp) > now then
    return redis.call('HGET', KEYS[9], id)
  end
  return nil
end
local what = ARGV[1]
if what == 'id' then
  local id = ARGV[2]
  local lease = redis.call('ZSCORE', KEYS[6], id)
  if lease then
    local p = redis.call('EXISTS', KEYS[8]) == 1 and redis.call('HGET', KEYS[8], id)
    row('active', id, tonumber(lease), p)
    return {'ok', now, rows}
  end
  for i = 3, 5 do
    local s = redis.call('ZSCORE', KEYS[i], id)
    if s then
      s = tonumber(s)
      row(s <= maxscore and 'pending' or 'scheduled', id, s)
      return {'ok', now, rows}
    end
  end
  if redis.call('HEXISTS', KEYS[11], 'p:' .. id) == 1 then
    row('waiting', id, 0)
    if #rows > 0 then
      return {'ok', now, rows}
    end
  end
  local e = done(id)
  if e then
    rows[#rows + 1] = {'done', e}
    return {'ok', now, rows}
  end
  e = find_dead(KEYS[7], id)
  if e then
    rows[#rows + 1] = {'dead', e}
  end
  return {'ok', now, rows}
end
local off, lim = tonumber(ARGV[2]), tonumber(ARGV[3])
if what == 'dead' then
  for _, e in ipairs(redis.call('LRANGE', KEYS[7], off, off + lim - 1)) do
    rows[#rows + 1] = {'dead', e}
  end
  return {'ok', now, rows}
end
if what == 'completed' then
  -- newest first; expired entries not yet trimmed are skipped
  local r = redis.call('ZREVRANGEBYSCORE', KEYS[10], '+inf', '(' .. int_str(now), 'LIMIT', off, lim)
  if #r > 0 then
    local es = mread('HMGET', KEYS[9], r)
    for i = 1, #r do
      if es[i] then
        rows[#rows + 1] = {'done', es[i]}
      end
    end
  end
  return {'ok', now, rows}
end
if what == 'active' then
  local r = redis.call('ZRANGE', KEYS[6], off, off + lim - 1, 'WITHSCORES')
  for i = 1, #r, 2 do
    row('active', r[i], tonumber(r[i + 1]))
  end
  return {'ok', now, rows}
end
local lo, hi = '-inf', int_str(maxscore)
if what ~= 'pending' then
  lo, hi = '(' .. int_str(maxscore), '+inf'
end
for i = 3, 5 do
  if lim <= 0 then
    break
  end
  local count = redis.call('ZCOUNT', KEYS[i], lo, hi)
  if off >= count then
    off = off - count
  else
    local r = redis.call('ZRANGEBYSCORE', KEYS[i], lo, hi, 'WITHSCORES', 'LIMIT', off, lim)
    off = 0
    for j = 1, #r, 2 do
      row(what, r[j], tonumber(r[j + 1]))
      lim = lim - 1
    end
  end
end
return {'ok', now, rows}
