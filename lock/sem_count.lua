-- sem_count: number of live permits.
-- KEYS[1] semaphore         lock:sem:{resource_type}:{resource_id}
-- ARGV[1] the client's max lease, ms
-- Returns {'ok', count of permits whose lease has not run out}. Members whose
-- expiry lies beyond now + max lease (not written by this package) are
-- not counted; sem_acquire drops them.
local nowus = now_us()
return {'ok', redis.call('ZCOUNT', KEYS[1], '(' .. int_str(math.floor(nowus / 1000)),
  int_str(math.ceil(nowus / 1000) + tonumber(ARGV[1])))}
