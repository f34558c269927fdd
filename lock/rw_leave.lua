-- rw_leave: take a writer that gave up out of the waiting writers.
-- KEYS[1] waiting writers   lock:writers:{resource_type}:{resource_id}
-- ARGV[1] owner ID
-- Returns ok(1 when it was waiting, else 0).
return ok(redis.call('ZREM', KEYS[1], ARGV[1]))
