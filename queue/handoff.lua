-- handoff: push a job onto the executions list in the AI platform's own
-- item format (Handoff, with WithSeedConsumers), for whichever consumer
-- pops it first: one of the AI platform (RPOP) or of this package (a
-- dequeue adopts it). A resent request pushes nothing more.
--
-- KEYS[1] executions list  queue:{q}:executions
-- KEYS[2] reply memo       queue:{q}:reply:{request_id}
-- ARGV[1] the item JSON, built whole by Go
-- ARGV[2] reply memo TTL in ms
-- Returns {'ok'}; {'corrupt', 2, why} when the memo is not a reply.
--
-- The list is read before the memo is written, so a list of the wrong
-- type fails the script with nothing written.
redis.call('LLEN', KEYS[1])
local prev = redis.call('SET', KEYS[2], 'ok', 'PX', ARGV[2], 'NX', 'GET')
if prev == 'ok' then
  return {'ok'}
elseif prev then
  return {'corrupt', 2, 'reply memo is not a reply'}
end
redis.call('LPUSH', KEYS[1], ARGV[1])
return {'ok'}
