-- touch_location_fast: the common case of touch_location.lua, put before
-- everything else of its script (call.Head), so that no closure of the
-- prelude or of lib.lua is made when it returns. The case: the index
-- holds the location with a time (in digits) less than ARGV[5] ms before
-- this reading's, or after it. Nothing is written then: the entry is at
-- most ARGV[5] older than the location's newest reading, which
-- touch_location.lua allows for (Locations lists an entry, and the key
-- lives, ARGV[5] beyond the retention). Anything else (no entry: a new
-- location, or an index that was lost; an entry ARGV[5] old or more)
-- falls through to touch_location.lua.
--
-- KEYS (as touch_location.lua takes them)
-- KEYS[1] sensor-index:locations
-- ARGV (as touch_location.lua takes them; ARGV[3] and ARGV[4] are not
-- read here)
-- ARGV[1] location            ARGV[2] the reading's time, Unix ms
-- ARGV[5] refresh interval, ms
-- Returns 'ok' (as touch_location.lua does) when the entry is recent
-- enough; otherwise it returns nothing and falls through to
-- touch_location.lua.
--
-- Why a twin: its bench row, BenchmarkSensorIngest/redschema-norollups,
-- costs the server 185k instructions per reading with this head and 269k
-- without it (31 % less; 19 % on the redschema row, whose rollups cost
-- the same either way, 12 % on redschema-compact; callgrind,
-- bench/README.md "Where a script's instructions go", 2026-11-29).
repeat
  local cur = redis.call('ZSCORE', KEYS[1], ARGV[1])
  if not cur or #cur > 15 or not string.find(cur, '^%d+$') then break end
  if ARGV[2] - cur >= ARGV[5] + 0 then break end
  return 'ok'
until true
