-- schedules: the server time and every periodic job's definition.
--
-- KEYS[1] schedules hash  queue:{q}:schedules
-- Returns {'ok', now_ms, {name, definition, ...}}.
return {'ok', now_ms(), redis.call('HGETALL', KEYS[1])}
