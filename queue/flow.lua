-- flow: enqueue a parent job and its children at once. The children are
-- ready now; the parent waits in the jobs hash, in no priority set, until
-- the last child leaves the queue (the settle and dequeue scripts count
-- them down in the flows hash: see flow_plan in lib.lua). A resent
-- request reports its first outcome.
--
-- KEYS[1] jobs hash      queue:{q}:jobs
-- KEYS[2] high zset      queue:{q}:priority:high
-- KEYS[3] normal zset    queue:{q}:priority:normal
-- KEYS[4] low zset       queue:{q}:priority:low
-- KEYS[5] stats hash     queue:stats:{q}
-- KEYS[6] wake list      queue:{q}:executions
-- KEYS[7] reply memo     queue:{q}:reply:{request_id}
-- KEYS[8] flows hash     queue:{q}:flows
-- KEYS[9] events stream  queue:{q}:events, with WithEvents only
-- ARGV[1] dead-child policy: fail | ignore
-- ARGV[2] reply memo TTL in ms
-- ARGV[3] events stream length (WithEvents; "0" for none)
-- ARGV[4..] groups of 3, the parent first: job ID, job JSON, level
-- Returns {'ok'} when enqueued, {'conflict', id} when a job of the flow has a
-- live ID (nothing written), {'corrupt', i, why}.
local memo = replayed(KEYS[7])
if memo then
  return memo
elseif memo == false then
  return {'corrupt', 7, 'reply memo is not a reply'}
end
-- reads first: the types of what is written, the counters, free IDs
typecheck({{'HLEN', 1}, {'ZCARD', 2}, {'ZCARD', 3}, {'ZCARD', 4}, {'LLEN', 6}, {'HLEN', 8}, {'XLEN', 9}})
local bad = stats_bad(KEYS[5], {'enq_seq', 'enq_skipped'})
if bad then
  return {'corrupt', 5, bad}
end
local lvkeys = {high = KEYS[2], normal = KEYS[3], low = KEYS[4]}
local ids = {}
for i = 4, #ARGV, 3 do
  ids[#ids + 1] = ARGV[i]
end
local live = mread('HMGET', KEYS[1], ids)
for x, id in ipairs(ids) do
  if live[x] then
    return remember(KEYS[7], {'conflict', id}, ARGV[2])
  end
end
local now = math.floor(now_us() / 1000)
local evk, evn = KEYS[9], ARGV[3]
local parent = ARGV[4]
redis.call('HSET', KEYS[1], parent, ARGV[5])
fifo_score(KEYS[5], now) -- counts the parent's enqueue; it is scored when ready
redis.call('HSET', KEYS[8], 'p:' .. parent, int_str(#ids - 1) .. ',' .. ARGV[1] .. ',' .. ARGV[6])
emit(evk, evn, 'enqueued', parent, now)
for i = 7, #ARGV, 3 do
  local id = ARGV[i]
  redis.call('HSET', KEYS[1], id, ARGV[i + 1])
  redis.call('ZADD', lvkeys[ARGV[i + 2]], int_str(fifo_score(KEYS[5], now)), id)
  redis.call('HSET', KEYS[8], 'c:' .. id, parent)
  emit(evk, evn, 'enqueued', id, now)
end
wake(KEYS[6])
return remember(KEYS[7], {'ok'}, ARGV[2])
