-- erase: delete a batch of a user's conversations and, once the user has
-- none left, the user's context and list.
-- KEYS[1] user context           ai:memory:user:{user_id}
-- KEYS[2] user's conversations   ai:memory:user-convs:{user_id}
-- KEYS[3..] four keys per conversation: conversation, meta, request IDs,
--           pending list
-- ARGV[1..] the conversation IDs (at most 100)
-- Returns {'ok', conversations left in the list}. Idempotent.
if #ARGV > 0 then
  redis.call('ZREM', KEYS[2], unpack(ARGV))
end
for i = 3, #KEYS do
  redis.call('DEL', KEYS[i])
end
local left = redis.call('ZCARD', KEYS[2])
if left == 0 then
  redis.call('DEL', KEYS[1], KEYS[2])
end
return {'ok', left}
