-- ingest_zset: store one motion or environmental reading in seed 003's
-- sorted set, with its meta hash, discovery index and rollups, trimming
-- each to its retention. Sent after the prelude and lib.lua (call.Uses:
-- str_field, member_value, side_read, side_write, keep_until), and after
-- ingest_zset_fast.lua (call.Head), which handles the common case or
-- falls through to this script having written nothing.
-- KEYS[1] sensor:motion:{location} or sensor:environmental:{location}
-- KEYS[2] sensor-index:types:{location}
-- KEYS[3] sensor-rollup:1m:{sensor_type}:{location}
-- KEYS[4] sensor-rollup:1h:{sensor_type}:{location}
-- KEYS[5] meta:motion:{location} (motion only)
-- ARGV[1] reading ID ("": none, WithoutReadingIDs)
-- ARGV[2] timestamp, Unix ms
-- ARGV[3] member (JSON)       ARGV[4] sensor type
-- ARGV[5] environmental field ("temperature", "illuminance"), "" for motion
-- ARGV[6] value for the rollups ("" for none)
-- ARGV[7] motion state ("on", "off", "")
-- ARGV[8] entity ID ("" for none)
-- ARGV[9] duplicate policy: "keep", "last" or "first"
-- ARGV[10] retention, ms      ARGV[11] max future, ms
-- ARGV[12] minute tier retention, ms (0: off)
-- ARGV[13] hour tier retention, ms (0: off)
-- Returns {'ok', "stored"}, {'ok', "duplicate"} (FirstWins found the sensor's
-- reading at that time), {'ok', "late"} (older than the retention: not
-- stored), {'invalid', why} for a timestamp too far ahead of the server
-- clock, {'corrupt', i, why} for foreign data at KEYS[i]. Every key is read
-- before anything is written, so a corrupt key stops the write whole.
-- A resend of a write that ran (same reading ID at the same time, or a
-- member identical to ARGV[3]: a write without an ID) finds
-- its member and reports "stored" without counting it again.

-- has_field reports whether m has the key field.
local function has_field(m, field)
  return string.find(m, '"' .. field .. '"%s*:') ~= nil
end

local id, ts, member, typ, field = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5]
local val, state, entity, policy = to_num(ARGV[6]), ARGV[7], ARGV[8], ARGV[9]
local ret, future = tonumber(ARGV[10]), tonumber(ARGV[11])
local now = now_ms()
if ts > now + future then
  return {'invalid', 'timestamp ' .. ARGV[2] .. ' is more than ' .. ARGV[11] .. ' ms ahead of the server clock'}
end
local cut = now - ret
if ts < cut then return {'ok', 'late'} end

-- Readings at the same time: this write sent again, or the sensor's
-- duplicates.
local same = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[2], ARGV[2])
for i = 1, #same do
  if same[i] == member or (id ~= '' and str_field(same[i], 'id', true) == id) then return {'ok', 'stored'} end
end
local dups, dn, ds = {}, 1, val
for i = 1, #same do
  local m = same[i]
  if (field == '' or has_field(m, field)) and (str_field(m, 'entity_id') or '') == entity then
    if policy == 'first' then return {'ok', 'duplicate'} end
    if policy == 'last' then
      dups[#dups + 1] = m
      local ov = member_value(m, field)
      if ov and val then dn, ds = dn - 1, ds - ov end
    end
  end
end

-- Read every other key before writing.
local on, mk, hk = state == 'on', tonumber(ARGV[12]), tonumber(ARGV[13])
local imeta = KEYS[5] and 5
local sd, bad, why = side_read(imeta, on, 2, 3, 4, typ, ts, val, now, mk, hk)
if not sd then return {'corrupt', bad, why} end

for i = 1, #dups do redis.call('ZREM', KEYS[1], dups[i]) end
redis.call('ZADD', KEYS[1], ARGV[2], member)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. int_str(cut))
keep_until(KEYS[1], math.max(now, ts) + ret, now)
side_write(sd, imeta, on, 2, 3, 4, typ, ts, ARGV[2], val, ARGV[6], dn, ds, cut, ret, now, mk, hk)
return {'ok', 'stored'}
