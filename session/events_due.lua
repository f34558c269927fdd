-- events_due.lua: the users of one slot whose index Sweep must visit now
-- (read-only).
--
-- KEYS[1] sweep schedule   session:due:{slot}
-- ARGV[1] most users to return
--
-- Returns {'ok', {user_id, ...}}: those scored at or before the server's now.
return {'ok', redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now_ms(), 'LIMIT', '0', ARGV[1])}
