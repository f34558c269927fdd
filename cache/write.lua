-- write: store an entry (a load's result, a Set, or a marker) with its
-- metadata, and publish a wake-up or invalidation. Everything it writes
-- comes computed from the caller, so it reads no clock and formats
-- nothing: the hint is what a hit reads besides the value (see read.go),
-- and the entry's freshness is its TTL less the grace the hint records.
-- KEYS[1] value key   (STRING)
-- KEYS[2] meta key    (HASH)
-- ARGV[1] write ID: the load's owner ID, or the Set call's request ID
-- ARGV[2] value bytes ('' for a marker)
-- ARGV[3] life, ms: the freshness plus the grace (a marker: its freshness)
-- ARGV[4] hint: "{grace_ms}:{delta_ms}" for a value (delta: how long the
--         load took), the mode for a marker
-- ARGV[5] mode: 'load', 'neg' (not found), 'pass' (uncacheable) need the
--         caller's lease; 'set' writes whatever is there
-- ARGV[6] events channel
-- ARGV[7] origin (the writing Store's ID, for the event)
-- ARGV[8] created_at (RFC 3339, the writer's clock)
-- ARGV[9] size_bytes
-- Returns {'ok', waiters} when stored (waiters: processes that were waiting),
-- {'conflict', 'lost'} when the lease is not the caller's any more (another
-- owner took over, or a Set, Delete or InvalidateTag came in between): a
-- load that lost its lease must not overwrite what replaced it.
-- A replay of a write that went through finds its write ID and reports
-- {'ok', 0}. A Set publishes "k {origin} {key}" so local tiers drop the key;
-- a load publishes it only when processes wait for it.
local mode = ARGV[5]
local waiters = 0
if mode ~= 'set' then
  local m = redis.pcall('HMGET', KEYS[2], 'lease', 'wid', 'waiters')
  if m.err then
    return {'conflict', 'lost'}
  end
  local l = m[1]
  if not l or string.sub(l, 1, #ARGV[1] + 1) ~= ARGV[1] .. ':' then
    if m[2] == ARGV[1] then
      return {'ok', 0}
    end
    return {'conflict', 'lost'}
  end
  waiters = tonumber(m[3]) or 0
end
if mode == 'load' or mode == 'set' then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  redis.call('DEL', KEYS[2])
  redis.call('HSET', KEYS[2], 'created_at', ARGV[8], 'hits', '0', 'size_bytes', ARGV[9], 'hint', ARGV[4],
    'wid', ARGV[1])
else
  redis.call('DEL', KEYS[1], KEYS[2])
  redis.call('HSET', KEYS[2], 'created_at', ARGV[8], 'hint', mode, 'wid', ARGV[1])
end
redis.call('PEXPIRE', KEYS[2], ARGV[3])
if mode == 'set' or waiters > 0 then
  redis.call('PUBLISH', ARGV[6], 'k ' .. ARGV[7] .. ' ' .. KEYS[1])
end
return {'ok', waiters}
