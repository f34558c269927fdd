-- ingest_compact: store one reading in the compact encoding: chunks of
-- CHUNK_MAX readings in time order (more when late readings joined one)
-- in a sorted set scored by each chunk's start,
-- every reading of a chunk at or after its start and before the next
-- chunk's; with the motion meta hash, the discovery index and the
-- rollups, as ingest_zset.lua. Sent after the prelude and lib.lua
-- (call.Uses: chunk_parse, side_read, side_write, keep_until).
-- KEYS[1] sensor-compact:{sensor_type}:{location}
-- KEYS[2] sensor-index:types:{location}
-- KEYS[3] sensor-rollup:1m:{sensor_type}:{location}
-- KEYS[4] sensor-rollup:1h:{sensor_type}:{location}
-- KEYS[5] meta:motion:{location} (motion only)
-- ARGV[1] short reading ID    ARGV[2] timestamp, Unix ms
-- ARGV[3] value ("" for none) ARGV[4] sensor type
-- ARGV[5] unit                ARGV[6] entity ID
-- ARGV[7] motion state ("on", "off", "")
-- ARGV[8] duplicate policy: "keep", "last" or "first"
-- ARGV[9] retention, ms       ARGV[10] max future, ms
-- ARGV[11] minute tier retention, ms (0: off)
-- ARGV[12] hour tier retention, ms (0: off)
-- Returns {'ok', "stored"}, {'ok', "duplicate"} (FirstWins found a reading at
-- that time), {'ok', "late"} (older than the retention: not stored),
-- {'invalid', why} for a timestamp too far ahead of the server clock,
-- {'corrupt', i, why} for foreign data at KEYS[i]; every key is read before
-- anything is written. A reading of the same time and short ID is this
-- write sent again: "stored", counted once.

-- CHUNK_MAX is the most readings a chunk takes in time order.
local CHUNK_MAX = 64

-- chunk_text renders a chunk.
local function chunk_text(start, unit, entity, es)
  local t = {int_str(start), '|', unit, '|', entity}
  for i = 1, #es do
    t[#t + 1] = ';' .. int_str(es[i][1]) .. ',' .. es[i][2] .. ',' .. es[i][3]
  end
  return table.concat(t)
end

local rid, ts, val, typ = ARGV[1], tonumber(ARGV[2]), to_num(ARGV[3]), ARGV[4]
local state, policy = ARGV[7], ARGV[8]
local ret, future = tonumber(ARGV[9]), tonumber(ARGV[10])
local now = now_ms()
if ts > now + future then
  return {'invalid', 'timestamp ' .. ARGV[2] .. ' is more than ' .. ARGV[10] .. ' ms ahead of the server clock'}
end
local cut = now - ret
if ts < cut then return {'ok', 'late'} end

local found = redis.call('ZREVRANGEBYSCORE', KEYS[1], ARGV[2], '-inf', 'LIMIT', '0', '1')
local old, start, unit, entity, es = found[1], ts, ARGV[5], ARGV[6], {}
if old then
  start, unit, entity, es = chunk_parse(old)
  if not start then return {'corrupt', 1, 'member is not a chunk: ' .. string.sub(old, 1, 64)} end
end
local off = ts - start
local kept, dn, ds, removed, last = {}, 1, val, false, 0
for i = 1, #es do
  local e = es[i]
  if e[1] == off and e[3] == rid then return {'ok', 'stored'} end
  if e[1] > last then last = e[1] end
end
for i = 1, #es do
  local e = es[i]
  if e[1] == off and policy == 'first' then return {'ok', 'duplicate'} end
  if e[1] == off and policy == 'last' then
    local ov = to_num(e[2])
    if ov and val then dn, ds = dn - 1, ds - ov end
    removed = true
  else
    kept[#kept + 1] = e
  end
end
if old and not removed and #kept >= CHUNK_MAX and off > last and
    #redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[2], '+inf', 'LIMIT', '0', '1') == 0 then
  -- the newest chunk is full and the reading is later than all of its
  -- readings: start another (a late reading joins the chunk of its time,
  -- which then holds more than CHUNK_MAX, so that no chunk starts before
  -- a reading of the chunk ahead of it)
  old, start, unit, entity, kept, off = nil, ts, ARGV[5], ARGV[6], {}, 0
end
kept[#kept + 1] = {off, ARGV[3], rid}

local on, mk, hk = state == 'on', tonumber(ARGV[11]), tonumber(ARGV[12])
local imeta = KEYS[5] and 5
local sd, bad, why = side_read(imeta, on, 2, 3, 4, typ, ts, val, now, mk, hk)
if not sd then return {'corrupt', bad, why} end

if old then redis.call('ZREM', KEYS[1], old) end
redis.call('ZADD', KEYS[1], int_str(start), chunk_text(start, unit, entity, kept))
-- Chunks that start before the cut and are followed by another that
-- does too hold only readings older than the retention.
local n = redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. int_str(cut))
if n > 1 then redis.call('ZREMRANGEBYRANK', KEYS[1], '0', n - 2) end
keep_until(KEYS[1], math.max(now, ts) + ret, now)
side_write(sd, imeta, on, 2, 3, 4, typ, ts, ARGV[2], val, ARGV[3], dn, ds, cut, ret, now, mk, hk)
return {'ok', 'stored'}
