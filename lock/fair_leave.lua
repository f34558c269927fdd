-- fair_leave: take a waiter that gave up out of the fair queue.
-- KEYS[1] queue             lock:queue:{resource_type}:{resource_id}
-- KEYS[2] waiter deadlines  lock:waiters:{resource_type}:{resource_id}
-- ARGV[1] owner ID
-- Returns {'ok', number of entries removed from the queue}.
redis.call('ZREM', KEYS[2], ARGV[1])
return {'ok', redis.call('LREM', KEYS[1], '0', ARGV[1])}
