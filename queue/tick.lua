-- tick: claim one tick of a periodic job and enqueue its job, atomically.
-- The job is enqueued by enqueue() of enqueue_lib.lua, the enqueue
-- script's own logic, in this script or not at all; the claim is a
-- compare-and-set of the whole stored definition, so exactly one caller
-- claims each tick.
--
-- KEYS[1..5] as enqueue.lua: jobs hash, priority zset, stats hash, wake
--            list, reply memo
-- KEYS[6]    schedules hash  queue:{q}:schedules
-- KEYS[7]    events stream   queue:{q}:events, with WithEvents only
-- ARGV[1..5] as enqueue.lua (always all five: ID, JSON, 0, 0, 0)
-- ARGV[6]    schedule name
-- ARGV[7]    the definition the caller read (its due tick included)
-- ARGV[8]    its due tick, Unix ms: not claimed before server time reaches it
-- ARGV[9]    the definition to store: the next due tick
-- ARGV[10]   "1": enqueue the job; "0": advance only (a skipped tick, or
--            a new definition's first due tick)
-- ARGV[11]   events stream length, with WithEvents only
-- Returns enqueue's reply when claimed: {'ok'}, {'conflict', 'live'} when the
-- tick's job ID is live (the tick advances), or the corrupt or invalid
-- reply that left everything unwritten, the claim included; or
-- {'conflict', 'claimed'} when the stored definition is no longer ARGV[7]
-- (another caller claimed the tick, or it was replaced or removed),
-- {'conflict', 'early'} before the due tick. A resend of a request whose
-- first run enqueued reports that first outcome.
local cur = redis.call('HGET', KEYS[6], ARGV[6])
if cur ~= ARGV[7] then
  if ARGV[10] == '1' and redis.call('EXISTS', KEYS[5]) == 1 then
    return enqueue(true, KEYS[7], ARGV[11]) -- replays this request's first outcome
  end
  return {'conflict', 'claimed'}
end
if now_ms() < tonumber(ARGV[8]) then
  return {'conflict', 'early'}
end
if ARGV[10] == '1' then
  local r = enqueue(true, KEYS[7], ARGV[11])
  local st = r ~= 'ok' and r[1] or r -- enqueue returns 'ok' bare, other outcomes as tables
  if st == 'conflict' then
    -- the tick's job ID is live: this tick was enqueued already (never
    -- by this script); advance, and say so
    redis.call('HSET', KEYS[6], ARGV[6], ARGV[9])
  end
  if st ~= 'ok' then
    return r
  end
end
redis.call('HSET', KEYS[6], ARGV[6], ARGV[9])
return 'ok'
