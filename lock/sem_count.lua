-- sem_count: number of live permits.
-- KEYS[1] semaphore         lock:sem:{resource_type}:{resource_id}
-- Returns the count of permits whose lease has not run out.
local t = redis.call('TIME')
local nowms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZCOUNT', KEYS[1], '(' .. string.format('%.0f', nowms), '+inf')
