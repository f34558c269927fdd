-- lib.lua: the sensor package's library, sent whole after the prelude
-- and before every script of the package that stores or reads readings
-- (call.Uses), so that the member, rollup and chunk formats are spelled
-- once. It holds only what two or more scripts use: the write helpers
-- (ingest_zset, ingest_list, ingest_compact; index_touch also
-- touch_location) and the reading sources (latest, range, aggregate).
-- It defines functions and returns nothing; nothing here builds a key.

-- parse_iso returns the Unix ms of "YYYY-MM-DDTHH:MM:SS[.fff...]Z" (the
-- seed's timestamps), or nil.
local function parse_iso(s)
  if type(s) ~= 'string' then return nil end
  local y, mo, d, h, mi, se, frac = string.match(s, '^(%d%d%d%d)%-(%d%d)%-(%d%d)T(%d%d):(%d%d):(%d%d)%.?(%d*)Z$')
  if not y then return nil end
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  if mo < 1 or mo > 12 or d < 1 or d > 31 then return nil end
  if mo <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local doy = math.floor((153 * ((mo + 9) % 12) + 2) / 5) + d - 1
  local days = era * 146097 + yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy - 719468
  local ms = 0
  if #frac > 0 then ms = tonumber(string.sub(frac .. '00', 1, 3)) end
  return (days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(se)) * 1000 + ms
end

-- str_field returns the string value of the first (or, with last, the
-- last) key field of the JSON member m, or nil. Our members and the
-- seed's put a generic reading's "data" object first, so the last match
-- is the top-level field.
local function str_field(m, field, last)
  local pat = '"' .. field .. '"%s*:%s*"([^"\\]*)"'
  if not last then return string.match(m, pat) end
  local v
  for x in string.gmatch(m, pat) do v = x end
  return v
end

-- num_field returns the number of the first key field of m, or nil.
local function num_field(m, field)
  return to_num(string.match(m, '"' .. field .. '"%s*:%s*(%-?[%d%.]+[eE]?[%+%-]?%d*)'))
end

-- data_value returns a generic member's value: its data object's
-- top-level "value" when that is a number, else nil (as the Go side
-- reads it back). The pattern serves the usual member, which begins
-- {"data":{"value": and holds no other "value" and no escape; any other
-- member is decoded, so a nested, repeated or escaped "value" is never
-- taken for it.
local function data_value(m)
  if string.sub(m, 1, 17) == '{"data":{"value":' and not string.find(m, '"value"', 18, true)
    and not string.find(m, '\\', 18, true) then
    return num_field(m, 'value')
  end
  local ok, t = pcall(cjson.decode, m)
  if ok and type(t) == 'table' and type(t.data) == 'table' and type(t.data.value) == 'number' then
    return t.data.value
  end
  return nil
end

-- member_value returns a member's value for the aggregates: a motion
-- state as 1 or 0, the field of an environmental reading, a generic
-- reading's data "value"; nil when there is none.
local function member_value(m, field)
  if field == '' then
    local s = str_field(m, 'state')
    if s == 'on' then return 1 elseif s == 'off' then return 0 end
    return nil
  end
  return num_field(m, field)
end

-- fmt_num formats a number so that tonumber gives it back exactly.
local function fmt_num(x)
  if x == math.floor(x) and math.abs(x) < 1e15 then return int_str(x) end
  return string.format('%.17g', x)
end

-- keep_until makes key live at least until at (Unix ms): it never
-- shortens a TTL that a reading with a later timestamp set.
local function keep_until(key, at, now)
  local want = math.ceil(at - now)
  if want < 1 then want = 1 end
  if redis.call('PTTL', key) < want then
    redis.call('PEXPIRE', key, int_str(want))
  end
end

-- index_touch records name in the index ZSET key with score ts (its
-- newest reading), drops entries older than cut, and keeps the key until
-- the newest entry leaves the retention ret. cur is the score read before.
local function index_touch(key, name, ts, cur, cut, ret, now)
  if not cur or ts > cur then
    redis.call('ZADD', key, int_str(ts), name)
  end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. int_str(cut))
  keep_until(key, math.max(now, ts) + ret, now)
end

-- Rollup members: "start:count:sum:min:max:first:first_ts:last:last_ts",
-- scored by start. roll_parse returns the fields as numbers and as the
-- strings they were, or nil when m is not a rollup.
local function roll_parse(m)
  local raw = {string.match(m, '^([^:]+):([^:]+):([^:]+):([^:]+):([^:]+):([^:]+):([^:]+):([^:]+):([^:]+)$')}
  if #raw ~= 9 then return nil end
  local p = {}
  for i = 1, 9 do
    local n = tonumber(raw[i])
    if not n or n ~= n or n == math.huge or n == -math.huge then return nil end
    p[i] = n
  end
  if p[2] < 0 or p[2] ~= math.floor(p[2]) then return nil end
  return p, raw
end

-- roll_read returns the bucket of ts in the rollup key of span ms and
-- retention keep (0: tier off): {start, member or false, numbers or
-- false, strings or false, start string}; nil when the tier is off or the
-- bucket is outside its retention; and false when the member is not a
-- rollup (the caller reports corruption).
local function roll_read(key, span, keep, ts, now)
  if keep <= 0 then return nil end
  local b = ts - ts % span
  if b < now - keep then return nil end
  local bs = int_str(b)
  local cur = redis.call('ZRANGEBYSCORE', key, bs, bs)
  if #cur == 0 then return {b, false, false, false, bs} end
  local p, raw = roll_parse(cur[1])
  if #cur > 1 or not p or p[1] ~= b then return false end
  return {b, cur[1], p, raw, bs}
end

-- roll_write adds a value v (vs as the writer spelled it) at ts (tss) to
-- the bucket read by roll_read: dn is the change of the count (1, or
-- less when readings at ts were replaced) and ds the change of the sum.
-- Unchanged fields keep their strings. Buckets are only added by the
-- first reading of a bucket, so that write alone trims the tier to its
-- retention and sets the key's TTL (to the newest bucket's end of
-- retention, never shorter). An update adds the new member before it
-- removes the old one: removing a key's only member deletes the key, and
-- the ZADD after it would make a key without a TTL. Replaced readings
-- that the bucket cannot have counted (it is new, or would keep fewer
-- than the new reading: they were written without rollups, by the
-- collector or a WithoutRollups client) are not taken out of it.
local function roll_write(key, bk, keep, ts, tss, v, vs, dn, ds, now)
  local p, r = bk[3], bk[4]
  if p and p[2] + dn < 1 then dn, ds = 1, v end
  if p then
    local f = {r[1], tostring(p[2] + dn), fmt_num(p[3] + ds), r[4], r[5], r[6], r[7], r[8], r[9]}
    if v < p[4] then f[4] = vs end
    if v > p[5] then f[5] = vs end
    if ts < p[7] or (dn < 1 and ts == p[7]) then f[6], f[7] = vs, tss end
    if ts >= p[9] then f[8], f[9] = vs, tss end
    local m = table.concat(f, ':')
    if m ~= bk[2] then
      redis.call('ZADD', key, bk[5], m)
      redis.call('ZREM', key, bk[2])
    end
    return
  end
  redis.call('ZADD', key, bk[5], table.concat({bk[5], '1', vs, vs, vs, vs, tss, vs, tss}, ':'))
  redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. int_str(now - keep))
  keep_until(key, math.max(now, bk[1]) + keep, now)
end

-- side_read reads, before a write writes anything, what every write
-- updates beside its raw key: lastMotionTime of the motion meta hash at
-- KEYS[imeta] (when imeta is given and the event is "on"), the type's
-- score in the index at KEYS[itypes], and the reading's buckets in the
-- rollups at KEYS[imin] and KEYS[ihour] (when it has a value; keeps are
-- the tiers' retention, 0 for off). It returns a table for side_write,
-- or nil, i, why when KEYS[i] holds foreign data.
local function side_read(imeta, on, itypes, imin, ihour, typ, ts, val, now, min_keep, hour_keep)
  local sd = {}
  if imeta and on then
    local last = redis.call('HGET', KEYS[imeta], 'lastMotionTime')
    if last then
      last = to_int(last, 0)
      if not last then return nil, imeta, 'lastMotionTime is not Unix ms' end
    end
    sd.last = last
  end
  local tcur = redis.call('ZSCORE', KEYS[itypes], typ)
  if tcur then
    tcur = score_ms(tcur)
    if not tcur then return nil, itypes, 'type index score is not Unix ms' end
  end
  sd.tcur = tcur
  if val then
    sd.rm = roll_read(KEYS[imin], 60000, min_keep, ts, now)
    if sd.rm == false then return nil, imin, 'bucket is not a rollup' end
    sd.rh = roll_read(KEYS[ihour], 3600000, hour_keep, ts, now)
    if sd.rh == false then return nil, ihour, 'bucket is not a rollup' end
  end
  return sd
end

-- side_write makes the updates side_read prepared, for a reading at ts
-- (tss as the writer spelled it) with value val (vs), dn and ds the
-- changes of the rollups' count and sum (see roll_write), cut the
-- retention's start and ret the retention.
local function side_write(sd, imeta, on, itypes, imin, ihour, typ, ts, tss, val, vs, dn, ds, cut, ret, now, min_keep, hour_keep)
  if imeta and on then
    if not sd.last or ts > sd.last then
      redis.call('HSET', KEYS[imeta], 'lastMotionTime', tss)
    end
    keep_until(KEYS[imeta], math.max(now, ts, sd.last or 0) + ret, now)
  end
  index_touch(KEYS[itypes], typ, ts, sd.tcur, cut, ret, now)
  if sd.rm then roll_write(KEYS[imin], sd.rm, min_keep, ts, tss, val, vs, dn, ds, now) end
  if sd.rh then roll_write(KEYS[ihour], sd.rh, hour_keep, ts, tss, val, vs, dn, ds, now) end
end

-- Compact chunks: "start|unit|entity" then ";offset,value,rid" per
-- reading (offset: ms after start; value: "" for none).

-- chunk_parse returns the header fields and the entries of a chunk
-- ({offset, value string, rid}), or nil when it is not a chunk.
local function chunk_parse(c)
  local start, unit, entity, rest = string.match(c, '^(%d+)|([^|;]*)|([^|;]*)(.*)$')
  if not start then return nil end
  local es = {}
  local pos = 1
  while pos <= #rest do
    local off, val, rid, nxt = string.match(rest, '^;(%d+),([^,;]*),([^,;]*)()', pos)
    if not off then return nil end
    es[#es + 1] = {tonumber(off), val, rid}
    pos = nxt
  end
  return tonumber(start), unit, entity, es
end

-- Reading sources. Each calls fn(ts, payload, value) for the readings
-- of its key between lo and hi in time order (oldest first; newest first
-- where it says so), and returns true, or nil and a corruption reason,
-- or false when the call would read more than MAX_SCAN members. payload
-- is what Go decodes: the JSON member, or "value|unit|entity|rid" of a
-- compact entry. value is the number the aggregates use (nil for none;
-- computed only when need_v).
local MAX_SCAN = 200000

-- env_other is the environmental field that shares the key with field.
local env_other = {temperature = 'illuminance', illuminance = 'temperature'}

-- field_end returns the position of the ':' after the key field in m,
-- or nil: a plain search for the compact form our writer and the seed's
-- use, then a pattern for JSON with spaces.
local needles = {}
local function field_end(m, field)
  local nd = needles[field]
  if not nd then
    nd = {'"' .. field .. '":', '"' .. field .. '"%s*:'}
    needles[field] = nd
  end
  local _, e = string.find(m, nd[1], 1, true)
  if e then return e end
  _, e = string.find(m, nd[2])
  return e
end

-- motion_value returns 1 or 0 for a motion member's state, or nil.
local function motion_value(m)
  if string.find(m, '"state":"on"', 1, true) then return 1 end
  if string.find(m, '"state":"off"', 1, true) then return 0 end
  return member_value(m, '')
end

-- zset_each reads a seed sorted set: field is the environmental
-- reading's field ("temperature"), or "" for motion. limit > 0 stops
-- after that many readings, newest first when rev. It passes fn the
-- time as the score's string.
local function zset_each(key, field, lo, hi, limit, rev, need_v, fn)
  local other = env_other[field]
  local found, off = 0, 0
  if limit == 0 and redis.call('ZCOUNT', key, lo, hi) > MAX_SCAN then return false end
  while true do
    local page
    if limit == 0 then
      page = redis.call('ZRANGEBYSCORE', key, lo, hi, 'WITHSCORES')
    elseif rev then
      page = redis.call('ZREVRANGEBYSCORE', key, hi, lo, 'WITHSCORES', 'LIMIT', off, '1000')
    else
      page = redis.call('ZRANGEBYSCORE', key, lo, hi, 'WITHSCORES', 'LIMIT', off, '1000')
    end
    for i = 1, #page, 2 do
      local m, v = page[i], nil
      if field == '' then
        v = motion_value(m)
        if not v then return nil, 'member is not a motion event: ' .. string.sub(m, 1, 64) end
        fn(page[i + 1], m, v)
        found = found + 1
      else
        local e = field_end(m, field)
        if e then
          if need_v then
            v = string.match(m, '^%s*(%-?%d[%d%.]*[eE]?[%+%-]?%d*)', e + 1)
            v = v and tonumber(v)
            if not v or v ~= v or v == math.huge or v == -math.huge then
              return nil, field .. ' is not a number: ' .. string.sub(m, 1, 64)
            end
          end
          fn(page[i + 1], m, v)
          found = found + 1
        elseif not field_end(m, other) then
          return nil, 'member is not a temperature or illuminance reading: ' .. string.sub(m, 1, 64)
        end
      end
      if limit > 0 and found >= limit then return true end
    end
    if limit == 0 or #page < 2000 then return true end
    off = off + 1000
    if off >= MAX_SCAN then return false end
  end
end

-- list_items reads a generic list (newest first by arrival) between lo
-- and hi into {ts, member, value, arrival} sorted by time (arrival order
-- among equal times).
local function list_items(key, lo, hi)
  local all = redis.call('LRANGE', key, '0', '-1')
  local out = {}
  for i = #all, 1, -1 do
    local m = all[i]
    local ts = parse_iso(str_field(m, 'timestamp', true))
    if not ts then return nil, 'member has no timestamp: ' .. string.sub(m, 1, 64) end
    if ts >= lo and ts <= hi then
      out[#out + 1] = {ts, m, data_value(m), #out}
    end
  end
  table.sort(out, function(a, b) return a[1] < b[1] or (a[1] == b[1] and a[4] < b[4]) end)
  return out
end

-- chunk_items appends the entries of chunk c within [lo, hi] to out as
-- {ts, payload, value, arrival}; it returns false when c is not a chunk.
local function chunk_items(out, c, lo, hi)
  local start, unit, entity, es = chunk_parse(c)
  if not start then return false end
  local tail = '|' .. unit .. '|' .. entity .. '|'
  for i = 1, #es do
    local e = es[i]
    local ts = start + e[1]
    if ts >= lo and ts <= hi then
      out[#out + 1] = {ts, e[2] .. tail .. e[3], to_num(e[2]), #out}
    end
  end
  return true
end

-- compact_items reads the chunks of a compact key between lo and hi,
-- sorted by time.
local function compact_items(key, lo, hi)
  local out = {}
  local first = redis.call('ZREVRANGEBYSCORE', key, lo, '-inf', 'LIMIT', '0', '1')
  local rest = redis.call('ZRANGEBYSCORE', key, '(' .. lo, hi)
  for _, list in ipairs({first, rest}) do
    for i = 1, #list do
      if not chunk_items(out, list[i], lo, hi) then return nil, 'member is not a chunk: ' .. string.sub(list[i], 1, 64) end
    end
  end
  table.sort(out, function(a, b) return a[1] < b[1] or (a[1] == b[1] and a[4] < b[4]) end)
  return out
end

-- each reads source kind ('zset', 'list', 'compact') of key between lo
-- and hi, oldest first, up to limit readings (0: all).
local function each(kind, key, field, lo, hi, limit, need_v, fn)
  if kind == 'zset' then return zset_each(key, field, int_str(lo), int_str(hi), limit, false, need_v, fn) end
  local its, why
  if kind == 'list' then its, why = list_items(key, lo, hi) else its, why = compact_items(key, lo, hi) end
  if not its then return nil, why end
  if #its > MAX_SCAN then return false end
  for i = 1, #its do
    if limit > 0 and i > limit then break end
    fn(its[i][1], its[i][2], its[i][3])
  end
  return true
end
