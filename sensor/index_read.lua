-- index_read: the names in a discovery index (types of a location, or
-- locations) with a time within a window before the server clock.
-- KEYS[1] sensor-index:types:{location} or sensor-index:locations
-- ARGV[1] window, ms: the retention (types), or the retention plus the
--         refresh interval (locations: see touch_location.lua)
-- Returns {'ok', {name, name, ...}} in name order.
local names = redis.call('ZRANGEBYSCORE', KEYS[1], int_str(now_ms() - tonumber(ARGV[1])), '+inf')
table.sort(names)
return {'ok', names}
