-- delete: delete one conversation and take it out of its user's list.
-- KEYS[1..4] the conversation, its meta, request IDs and pending list
-- KEYS[5] user's conversations   ai:memory:user-convs:{user_id}
-- ARGV[1] conversation ID
-- Returns {'ok'}. Idempotent.
redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
return 'ok'
