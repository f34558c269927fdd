-- reindex: record in the types index of a location the sensor types that
-- one raw key holds readings of, with the time of the newest, as writes
-- do; for data another writer (the sensor collector) put there. Sent
-- after the prelude and lib.lua (call.Uses: parse_iso, str_field,
-- field_end, motion_value, chunk_parse, index_touch, keep_until,
-- MAX_SCAN).
-- KEYS[1] the raw key: sensor:motion:{location},
--         sensor:environmental:{location}, sensor:{sensor_type}:{location}
--         or sensor-compact:{sensor_type}:{location}
-- KEYS[2] sensor-index:types:{location}
-- ARGV[1] the key's kind: "motion", "env", "list" or "compact"
-- ARGV[2] sensor type ("list" and "compact"; "" otherwise)
-- ARGV[3] retention, ms       ARGV[4] max future, ms
-- Returns {'ok', {type, ms, type, ms, ...}}: each type recorded and the
-- Unix ms of its newest reading within the retention (none: {}; a key
-- gone since the SCAN: {}); {'corrupt', 1, why} when KEYS[1] is of
-- another Redis type or its newest reading does not parse;
-- {'corrupt', 2, why} for a foreign score in the index. Nothing is
-- written before every key is read. An index entry only moves forward:
-- running it twice records the same.
local kind, ret, future = ARGV[1], tonumber(ARGV[3]), tonumber(ARGV[4])
local now = now_ms()
local cut, top = now - ret, now + future
local want = 'zset'
if kind == 'list' then want = 'list' end
local t = redis.call('TYPE', KEYS[1])
if type(t) == 'table' then t = t.ok end
if t == 'none' then return {'ok', {}} end
if t ~= want then return {'corrupt', 1, 'a ' .. tostring(t) .. ', not a ' .. want} end

local found, order = {}, {}
local function saw(typ, ms)
  if ms < cut or ms > top then return end
  if not found[typ] then order[#order + 1] = typ end
  if not found[typ] or ms > found[typ] then found[typ] = ms end
end
local lo, hi = int_str(cut), int_str(top)
if kind == 'motion' then
  local m = redis.call('ZREVRANGEBYSCORE', KEYS[1], hi, lo, 'WITHSCORES', 'LIMIT', '0', '1')
  if m[1] then
    local ms = score_ms(m[2])
    if not ms or not motion_value(m[1]) then return {'corrupt', 1, 'member is not a motion event: ' .. string.sub(m[1], 1, 64)} end
    saw('motion', ms)
  end
elseif kind == 'env' then
  -- newest first, until both types are seen (each one's newest)
  local off = 0
  while not (found.temperature and found.illuminance) and off < MAX_SCAN do
    local page = redis.call('ZREVRANGEBYSCORE', KEYS[1], hi, lo, 'WITHSCORES', 'LIMIT', int_str(off), '1000')
    for i = 1, #page, 2 do
      local m, ms = page[i], score_ms(page[i + 1])
      local tf, lf = field_end(m, 'temperature'), field_end(m, 'illuminance')
      if not ms or not (tf or lf) then
        return {'corrupt', 1, 'member is not a temperature or illuminance reading: ' .. string.sub(m, 1, 64)}
      end
      if tf then saw('temperature', ms) end
      if lf then saw('illuminance', ms) end
    end
    if #page < 2000 then break end
    off = off + 1000
  end
elseif kind == 'list' then
  -- the newest arrivals; a list is ordered by arrival, not by time
  local head = redis.call('LRANGE', KEYS[1], '0', '31')
  for i = 1, #head do
    local ms = parse_iso(str_field(head[i], 'timestamp', true))
    if not ms then return {'corrupt', 1, 'member has no timestamp: ' .. string.sub(head[i], 1, 64)} end
    saw(ARGV[2], ms)
  end
else
  local c = redis.call('ZREVRANGE', KEYS[1], '0', '0')
  if c[1] then
    local start, _, _, es = chunk_parse(c[1])
    if not start then return {'corrupt', 1, 'member is not a chunk: ' .. string.sub(c[1], 1, 64)} end
    for i = 1, #es do saw(ARGV[2], start + es[i][1]) end
  end
end

local cur = {}
for _, typ in ipairs(order) do
  local s = redis.call('ZSCORE', KEYS[2], typ)
  if s then
    s = score_ms(s)
    if not s then return {'corrupt', 2, 'type index score is not Unix ms'} end
  end
  cur[typ] = s or false
end
local out = {}
for _, typ in ipairs(order) do
  index_touch(KEYS[2], typ, found[typ], cur[typ] or nil, cut, ret, now)
  out[#out + 1] = typ
  out[#out + 1] = int_str(found[typ])
end
return {'ok', out}
