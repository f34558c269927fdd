-- progress: record the progress a job's handler reports, if the job is
-- still held under that delivery. Writing the same value again is
-- harmless, so a resend needs no memo.
--
-- KEYS[1] state hash     queue:{q}:state
-- KEYS[2] active zset    queue:{q}:active
-- KEYS[3] progress hash  queue:{q}:progress   id -> delivery,progress JSON
-- ARGV[1] job ID
-- ARGV[2] delivery
-- ARGV[3] progress JSON (bounded by Go)
-- KEYS[4] and ARGV[4]: the events stream and its length, with WithEvents
--         only (a progress event)
-- Returns {'ok', 1} when recorded, {'ok', 0} when the lease is lost (the job is
-- not in flight under that delivery). The field goes when the delivery is
-- settled (settle.lua).
local dlv = parse_state(redis.call('HGET', KEYS[1], ARGV[1]))
if not dlv or int_str(dlv) ~= ARGV[2] or not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  return {'ok', 0}
end
typecheck({{'HLEN', 3}, {'XLEN', 4}}) -- nothing written when either is not ours
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2] .. ',' .. ARGV[3])
emit(KEYS[4], ARGV[4], 'progress', ARGV[1], now_ms(), dlv, nil, nil, ARGV[3])
return {'ok', 1}
