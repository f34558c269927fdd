-- enqueue: add one job to a queue, unless its ID is live or inside its
-- uniqueness window. A resent request reports its first outcome.
--
-- KEYS[1] jobs hash      queue:{q}:jobs        id -> job JSON
-- KEYS[2] priority zset  queue:{q}:priority:{level}  id -> ready score
-- KEYS[3] stats hash     queue:stats:{q}
-- KEYS[4] wake list      queue:{q}:executions  the wake-up token
-- KEYS[5] reply memo     queue:{q}:reply:{request_id}, but for a Queue
--         WithoutReplayMemo's enqueue of a generated ID: the script reads
--         and writes the memo when it gets 5 keys or more before the
--         events stream
-- KEYS[6] unique string  queue:{q}:unique:{id}, only with a window (with
--         events and no window, the events stream, unused)
-- KEYS[#KEYS] events stream  queue:{q}:events, with WithEvents only
-- ARGV[1] job ID
-- ARGV[2] job JSON, ending with "max_retries":N} (the job has no state
--         entry until its first delivery, which reads N there)
-- ARGV[3] delay in ms from server time (0 to the max delay), and
-- ARGV[4] process-at in Unix ms, or 0, and
-- ARGV[5] uniqueness window in ms, or 0: the three only when one is not 0
--         (always with events)
-- ARGV[6] events stream length, with WithEvents only
-- Returns ok() when enqueued, conflict('live') when a live job has the
-- ID, conflict('window') when the ID is inside its uniqueness window,
-- corrupt(i, why), invalid(why).
--
-- The logic is enqueue() in lib.lua, which the tick script runs too.
local ev = ARGV[6] and KEYS[#KEYS]
local before = ev and #KEYS - 1 or #KEYS -- the keys before the events stream
return enqueue(before >= 5, ev, ARGV[6])
