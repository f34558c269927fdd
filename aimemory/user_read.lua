-- user_read: a user's context, with the tokens of the day as of the
-- server's clock (uses lib.lua).
-- KEYS[1] user context   ai:memory:user:{user_id}
-- ARGV[1..4] the starts (Unix ms) of local days -1, 0, +1 and +2 (lib.lua's today)
-- ARGV[5..7] the dates ("2026-01-16") of local days -1, 0 and +1
-- Returns {'ok', recent_topics or false, preferences or false,
-- last_conversation_id or false, tokens of the day, the day's date},
-- {'none', 'clock', now ms} when the server clock is outside the days passed,
-- {'corrupt', 1, why} when the accounting fields are not this package's.
local now = now_ms()
local day = today(now)
if not day then
  return {'none', 'clock', now}
end
local f = redis.call('HMGET', KEYS[1], 'recent_topics', 'preferences', 'last_conversation_id',
  'tokens_day', 'total_tokens_today')
local total, why = day_total(f[4], f[5], day)
if not total then
  return {'corrupt', 1, why}
end
return {'ok', f[1], f[2], f[3], total, day}
