-- channel_due: the channels of one due shard whose sweep is due (read
-- only, server time).
-- KEYS[1] presence:channel:due:{slot}
-- ARGV[1] most channels to return
-- Returns {'ok', list of channel IDs}.
if redis.call('EXISTS', KEYS[1]) == 0 then return {'ok', {}} end
return {'ok', redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', int_str(now_ms()), 'LIMIT', '0', tonumber(ARGV[1]))}
