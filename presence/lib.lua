-- lib.lua: helpers prepended to connect.lua, heartbeat.lua, disconnect.lua
-- and update.lua. It reads no KEYS or ARGV itself except in settle(), which
-- uses the layout those scripts share:
--
-- KEYS[1] presence:{user_id}        presence JSON (string)
-- KEYS[2] connections:{user_id}     connection ID -> connection JSON (hash)
-- KEYS[3] presence:online:{slot}    online index shard of the user's slot (zset)
-- ARGV[1] user ID
-- ARGV[2] connection ID ("" for update.lua)
-- ARGV[3] format: "002" or "004"
-- ARGV[4] presence TTL while online, ms (also the connection staleness bound)
-- ARGV[5] offline retention, ms (0: delete the presence key on going offline)
-- ARGV[6] events channel
-- ARGV[7] "1" to maintain the online index, "0" not to touch it
-- ARGV[8...] operation-specific
--
-- Every script returns {code, live connections, changed (0/1), status}, where
-- code is "ok", or an error code with details: {"corrupt", key, field}.

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function num(n) return string.format('%.0f', n) end

-- esc escapes s for a JSON string literal.
local function esc(s)
  return (string.gsub(s, '[%c"\\]', function(c)
    if c == '"' then return '\\"' end
    if c == '\\' then return '\\\\' end
    return string.format('\\u%04x', string.byte(c))
  end))
end

local function conn_last(v)
  local s = string.match(v, '"lastSeen"%s*:%s*(%d+)')
  return s and tonumber(s)
end

-- prune deletes the connections whose lastSeen is ttl old. It returns a
-- table of live connection ID -> lastSeen, their count, the latest lastSeen
-- among pruned ones (0 if none) and a table of live connection ID -> JSON;
-- or nil and the field that holds no lastSeen.
local function prune(key, now, ttl)
  local all = redis.call('HGETALL', key)
  local live, n, dead, maxDead, vals = {}, 0, {}, 0, {}
  for i = 1, #all, 2 do
    local last = conn_last(all[i + 1])
    if not last then return nil, all[i] end
    if now - last >= ttl then
      dead[#dead + 1] = all[i]
      if last > maxDead then maxDead = last end
    else
      live[all[i]] = last
      vals[all[i]] = all[i + 1]
      n = n + 1
    end
  end
  if #dead > 0 then redis.call('HDEL', key, unpack(dead)) end
  return live, n, maxDead, vals
end

-- freshest returns the live connection with the latest lastSeen (prefer
-- wins ties) and its metadata.device ('' if none or undecodable).
local function freshest(live, vals, prefer)
  local best, last = nil, -1
  for f, l in pairs(live) do
    if l > last or (l == last and f == prefer) then best, last = f, l end
  end
  if not best or not vals[best] then return '' end
  local d = string.match(vals[best], '"device"%s*:%s*"([^"\\]*)"')
  if d then return d end
  local ok, c = pcall(cjson.decode, vals[best])
  if ok and type(c) == 'table' and type(c.metadata) == 'table' and type(c.metadata.device) == 'string' then
    return c.metadata.device
  end
  return ''
end

local statuses = {online = true, away = true, busy = true, invisible = true, offline = true}

-- read_presence decodes the presence JSON: nil when absent, false when
-- corrupt, else {status, last, device, activity}.
local function read_presence(key)
  local raw = redis.call('GET', key)
  if not raw then return nil end
  local ok, p = pcall(cjson.decode, raw)
  if not ok or type(p) ~= 'table' or type(p.status) ~= 'string' or not statuses[p.status] then
    return false
  end
  local out = {status = p.status, last = tonumber(p.lastSeen) or 0, device = '', activity = ''}
  if type(p.metadata) == 'table' then
    if type(p.metadata.device) == 'string' then out.device = p.metadata.device end
    if type(p.metadata.lastActivity) == 'string' then out.activity = p.metadata.lastActivity end
  end
  return out
end

local function presence_json(fmt, user, status, last, count, device, activity)
  if fmt == '004' then
    return '{"userId":"' .. esc(user) .. '","status":"' .. status .. '","lastSeen":' .. num(last) .. '}'
  end
  local s = '{"status":"' .. status .. '","lastSeen":' .. num(last) .. ',"activeConnections":' .. count
  local md = {}
  if device ~= '' then md[#md + 1] = '"device":"' .. esc(device) .. '"' end
  if activity ~= '' then md[#md + 1] = '"lastActivity":"' .. esc(activity) .. '"' end
  if #md > 0 then s = s .. ',"metadata":{' .. table.concat(md, ',') .. '}' end
  return s .. '}'
end

-- index adds user with score, their presence expiry (nil: removes them).
-- A member stays for the retention after its expiry, so that the last seen
-- time of a user whose devices all died silently can still be read
-- (score - TTL). It prunes members past that and sets the shard's TTL to
-- its latest member's expiry plus the retention.
local function index(key, user, score, now)
  if ARGV[7] ~= '1' then return end
  local keep = tonumber(ARGV[5])
  if score then
    redis.call('ZADD', key, num(score), user)
  else
    redis.call('ZREM', key, user)
  end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', num(now - keep))
  if score and score >= now + tonumber(ARGV[4]) then
    -- no member of this profile can expire later than this one
    redis.call('PEXPIRE', key, score + keep - now)
    return
  end
  local top = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if top[2] then redis.call('PEXPIRE', key, math.max(1, tonumber(top[2]) + keep - now)) end
end

local function public(status)
  if status == 'invisible' then return 'offline' end
  return status
end

local function publish(ch, user, prev, cur, now)
  prev, cur = public(prev), public(cur)
  if ch ~= '' and prev ~= cur then
    redis.call('PUBLISH', ch, '{"userId":"' .. esc(user) .. '","status":"' .. cur ..
      '","previous":"' .. prev .. '","at":' .. num(now) .. '}')
  end
end

-- settle brings the presence key, the connections TTL, the index and the
-- events in line with the live connections after a script changed them.
-- p is the presence read before the change (nil if absent); live and n the
-- live connections; status and activity the values to store while
-- online (the device is the freshest connection's, vals and prefer as
-- freshest takes them); seen the lastSeen to record if the user goes
-- offline now. It returns the resulting status and whether online-ness
-- changed.
local function settle(p, live, vals, prefer, n, status, activity, seen, now)
  local fmt, ttl, retention, user = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[1]
  local was = 'offline'
  if p and p.status ~= 'offline' then was = p.status end
  if n > 0 then
    local device = freshest(live, vals, prefer)
    local last = 0
    for _, l in pairs(live) do if l > last then last = l end end
    local px = math.max(1, last + ttl - now)
    redis.call('SET', KEYS[1], presence_json(fmt, user, status, last, n, device, activity), 'PX', px)
    redis.call('PEXPIRE', KEYS[2], px)
    if status == 'invisible' then index(KEYS[3], user, nil, now) else index(KEYS[3], user, last + ttl, now) end
    publish(ARGV[6], user, was, status, now)
    return status, was == 'offline'
  end
  index(KEYS[3], user, nil, now)
  if was ~= 'offline' then
    if retention > 0 then
      redis.call('SET', KEYS[1], presence_json(fmt, user, 'offline', seen, 0, p.device, ''), 'PX', retention)
    else
      redis.call('DEL', KEYS[1])
    end
    publish(ARGV[6], user, was, 'offline', now)
    return 'offline', true
  end
  return 'offline', false
end
