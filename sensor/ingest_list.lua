-- ingest_list: store one reading of a generic type in seed 003's list,
-- newest first, capped and trimmed to the retention, with its meta hash,
-- discovery index and rollups. Sent after the prelude and lib.lua
-- (call.Uses: parse_iso, str_field, data_value, side_read, side_write,
-- keep_until).
-- KEYS[1] sensor:{sensor_type}:{location}
-- KEYS[2] meta:{sensor_type}:{location}
-- KEYS[3] sensor-index:types:{location}
-- KEYS[4] sensor-rollup:1m:{sensor_type}:{location}
-- KEYS[5] sensor-rollup:1h:{sensor_type}:{location}
-- ARGV[1] reading ID ("": none, WithoutReadingIDs)
-- ARGV[2] timestamp, Unix ms
-- ARGV[3] member (JSON)       ARGV[4] sensor type
-- ARGV[5] location            ARGV[6] value for the rollups ("" for none)
-- ARGV[7] entity ID ("" for none)
-- ARGV[8] duplicate policy: "keep", "last" or "first"
-- ARGV[9] retention, ms       ARGV[10] max future, ms
-- ARGV[11] minute tier retention, ms (0: off)
-- ARGV[12] hour tier retention, ms (0: off)
-- ARGV[13] list cap           ARGV[14] entries searched for a resend or
--                              a duplicate (the newest ones)
-- Returns {'ok', "stored"}, {'ok', "duplicate"} (FirstWins found the sensor's
-- reading at that time), {'ok', "late"} (older than the retention: not
-- stored), {'invalid', why} for a timestamp too far ahead of the server
-- clock, {'corrupt', i, why} for foreign data at KEYS[i]; every key is read
-- before anything is written. Duplicates and resends (the same ID, or a
-- member identical to ARGV[3]: reported "stored",
-- counted once) are recognised among the newest ARGV[14] entries of the
-- list (a list has no index by time).
local id, ts, member, typ = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local val, entity, policy = to_num(ARGV[6]), ARGV[7], ARGV[8]
local ret, future, cap = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[13])
local now = now_ms()
if ts > now + future then
  return {'invalid', 'timestamp ' .. ARGV[2] .. ' is more than ' .. ARGV[10] .. ' ms ahead of the server clock'}
end
local cut = now - ret
if ts < cut then return {'ok', 'late'} end

local recent = redis.call('LRANGE', KEYS[1], '0', tonumber(ARGV[14]) - 1)
for i = 1, #recent do
  if recent[i] == member or (id ~= '' and str_field(recent[i], 'id', true) == id) then return {'ok', 'stored'} end
end
-- entity_of returns a member's top-level entity ID ('' for none), never
-- one inside its data object (decoded: only members at the reading's
-- time get here).
local function entity_of(m)
  local ok, t = pcall(cjson.decode, m)
  if ok and type(t) == 'table' then
    return type(t.entity_id) == 'string' and t.entity_id or ''
  end
  return str_field(m, 'entity_id', true) or ''
end
local dups, dn, ds = {}, 1, val
for i = 1, #recent do
  local m = recent[i]
  if parse_iso(str_field(m, 'timestamp', true)) == ts and entity_of(m) == entity then
    if policy == 'first' then return {'ok', 'duplicate'} end
    if policy == 'last' then
      dups[#dups + 1] = m
      local ov = data_value(m)
      if ov and val then dn, ds = dn - 1, ds - ov end
    end
  end
end
local tail = redis.call('LINDEX', KEYS[1], '-1')
if tail and not parse_iso(str_field(tail, 'timestamp', true)) then
  return {'corrupt', 1, 'member has no timestamp: ' .. string.sub(tail, 1, 64)}
end
redis.call('HGET', KEYS[2], 'last_update') -- a wrong type fails here, before any write
local mk, hk = tonumber(ARGV[11]), tonumber(ARGV[12])
local sd, bad, why = side_read(nil, false, 3, 4, 5, typ, ts, val, now, mk, hk)
if not sd then return {'corrupt', bad, why} end

for i = 1, #dups do redis.call('LREM', KEYS[1], '1', dups[i]) end
redis.call('LPUSH', KEYS[1], member)
redis.call('LTRIM', KEYS[1], '0', cap - 1)
-- Readings leave from the tail once older than the retention (at most
-- 100 per write; queries skip any that remain).
for _ = 1, 100 do
  local t = redis.call('LINDEX', KEYS[1], '-1')
  local tts = t and parse_iso(str_field(t, 'timestamp', true))
  if not tts or tts >= cut then break end
  redis.call('RPOP', KEYS[1])
end
keep_until(KEYS[1], math.max(now, ts) + ret, now)
redis.call('HSET', KEYS[2], 'last_update', int_str(now), 'sensor_type', typ, 'location', ARGV[5])
keep_until(KEYS[2], math.max(now, ts) + ret, now)
side_write(sd, nil, false, 3, 4, 5, typ, ts, ARGV[2], val, ARGV[6], dn, ds, cut, ret, now, mk, hk)
return {'ok', 'stored'}
