-- lib.lua: the presence package's library for a user's presence and
-- connections (after index.lua), put before connect.lua, heartbeat.lua,
-- disconnect.lua, update.lua and connections.lua, which share this KEYS
-- and ARGV layout (sweep.lua shares ARGV[4..9]):
--
-- KEYS[1] presence:{user_id}        presence JSON (string)
-- KEYS[2] connections:{user_id}     connection ID -> connection JSON (hash);
--                                   never touched with the single-key layout
-- KEYS[3] presence:online:{slot}    online index shard of the user's slot (zset)
-- KEYS[4] presence:requests:{user_id} request memo (see replay.lua); not
--                                   passed to connections.lua
-- ARGV[1] user ID
-- ARGV[2] connection ID ("" for update.lua and connections.lua)
-- ARGV[3] format: "detailed" or "compact"
-- ARGV[4] presence TTL while online, ms (also the connection staleness bound)
-- ARGV[5] offline retention, ms (0: delete the presence key on going offline)
-- ARGV[6] events channel
-- ARGV[7] "1" to maintain the online index, "0" not to touch it
-- ARGV[8] layout: "hash" (connections in KEYS[2]) or "single" (connections
--         in the presence JSON's last member, "connections": {ID:
--         [connectedAt, lastSeen, metadata], ...})
-- ARGV[9] request ID, 16 hex digits ("" for read-only scripts)
-- ARGV[10...] operation-specific
--
-- Times are Unix ms of the server clock. A stored time this package did
-- not write (not an integer, negative, or more than SKEW_MS after now) is
-- corrupt: corrupt(i, why) names the key.

local single = ARGV[8] == 'single'

-- A connection value is its JSON text with the hash layout (as HGETALL
-- returns it; its bytes are kept) and, with the single-key layout, the
-- table cjson decodes from its compact form [connectedAt, lastSeen,
-- metadata] (positional: the names would cost 36 bytes per connection; the
-- whole value is decoded and encoded at once, in C, far faster than Lua
-- string work). The conn_* helpers take either.

-- unslash undoes cjson's escaping of "/" as "\/" (JSON allows it, but it
-- costs a byte and confuses people reading user agents). Where cjson
-- escapes "/" it escapes every one, so each "\/" it writes is one; where it
-- does not (other Lua JSON libraries), there is nothing to undo.
local slash_escaped = cjson.encode('/') == '"\\/"'

local function unslash(s)
  if not slash_escaped or not string.find(s, '\\/', 1, true) then return s end
  local out, i = {}, 1
  while true do
    local j = string.find(s, '\\/', i, true)
    if not j then break end
    out[#out + 1] = string.sub(s, i, j - 1)
    i = j + 1
  end
  out[#out + 1] = string.sub(s, i)
  return table.concat(out)
end

-- time_ok returns x (a JSON number decoded by cjson, or the text of one
-- as a decimal string) if it is a time this package could have written:
-- an integer in [0, now + SKEW_MS]; else nil.
local function time_ok(x, now)
  if type(x) == 'string' then x = to_int(x) end
  if type(x) ~= 'number' or x ~= math.floor(x) or x < 0 or x > now + SKEW_MS then return nil end
  return x
end

-- LAST_SEEN finds a connection JSON's lastSeen and captures its number.
local LAST_SEEN = '("lastSeen"%s*:%s*)([%-%d%.eE%+]+)'

-- conn_new returns a connection connected now with metadata md (JSON).
local function conn_new(now, md)
  if single then return {now, now, cjson.decode(md)} end
  return '{"connectedAt":' .. int_str(now) .. ',"lastSeen":' .. int_str(now) .. ',"metadata":' .. md .. '}'
end

-- conn_last returns a connection's lastSeen, or nil when it has none this
-- package could have written.
local function conn_last(v, now)
  if type(v) == 'table' then
    if type(v[1]) ~= 'number' or type(v[2]) ~= 'number' or type(v[3]) ~= 'table' then return nil end
    return time_ok(v[2], now)
  end
  if type(v) ~= 'string' then return nil end
  local _, d = string.match(v, LAST_SEEN)
  return time_ok(d, now)
end

-- conn_touch returns connection v with lastSeen set to t (a JSON text
-- keeps the rest of its bytes, spacing included).
local function conn_touch(v, t)
  if type(v) == 'table' then
    v[2] = t
    return v
  end
  return (string.gsub(v, LAST_SEEN, '%1' .. int_str(t), 1))
end

-- conn_device returns a connection's metadata.device ('' if none).
local function conn_device(v)
  local md
  if type(v) == 'table' then
    md = v[3]
  else
    local d = string.match(v, '"device"%s*:%s*"([^"\\]*)"')
    if d then return d end
    local okd, c = pcall(cjson.decode, v)
    if okd and type(c) == 'table' then md = c.metadata end
  end
  if type(md) == 'table' and type(md.device) == 'string' then return md.device end
  return ''
end

-- conn_text returns a connection's JSON text in the hash layout's form,
-- {"connectedAt","lastSeen","metadata"}.
local function conn_text(v)
  if type(v) ~= 'table' then return v end
  local md = '{}' -- an empty table would be "[]" to some encoders
  if next(v[3]) then md = unslash(cjson.encode(v[3])) end
  return '{"connectedAt":' .. int_str(v[1]) .. ',"lastSeen":' .. int_str(v[2]) .. ',"metadata":' .. md .. '}'
end

-- prune loads the user's connections (p is the presence read_presence
-- returned, used with the single-key layout) and drops those whose lastSeen
-- is ttl old: with write and the hash layout it deletes them; with the
-- single-key layout settle() rewrites the value without them. It returns a
-- table of live connection ID -> lastSeen, their count, the latest lastSeen
-- among pruned ones (0 if none) and a table of live connection ID -> value;
-- or nil and the ID of a connection without a valid lastSeen.
local function prune(p, now, ttl, write)
  local all = {}
  if not single then
    all = redis.call('HGETALL', KEYS[2])
  elseif p and p.conns then
    for f, c in pairs(p.conns) do
      if type(f) ~= 'string' then return nil, tostring(f) end
      all[#all + 1] = f
      all[#all + 1] = c
    end
  end
  local live, n, dead, maxDead, vals = {}, 0, {}, 0, {}
  for i = 1, #all, 2 do
    local last = conn_last(all[i + 1], now)
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
  if write and not single and #dead > 0 then batched('HDEL', KEYS[2], dead) end
  return live, n, maxDead, vals
end

-- put_conn and del_conn write one connection with the hash layout; with the
-- single-key layout settle() writes the whole value.
local function put_conn(conn, v)
  if not single then redis.call('HSET', KEYS[2], conn, v) end
end

local function del_conn(conn)
  if not single then redis.call('HDEL', KEYS[2], conn) end
end

-- freshest returns the live connection with the latest lastSeen (prefer
-- wins ties) and its metadata.device ('' if none or undecodable).
local function freshest(live, vals, prefer)
  local best, last = nil, -1
  for f, l in pairs(live) do
    if l > last or (l == last and f == prefer) then best, last = f, l end
  end
  if not best or not vals[best] then return '' end
  return conn_device(vals[best])
end

local statuses = {online = true, away = true, busy = true, invisible = true, offline = true}

-- read_presence decodes the presence JSON: nil when absent; false and the
-- reason when this package could not have written it; else {status, last,
-- device, activity, conns}, conns being the decoded "connections" object
-- of the single-key layout (nil otherwise).
local function read_presence(key, now)
  local raw = redis.call('GET', key)
  if not raw then return nil end
  local okd, p = pcall(cjson.decode, raw)
  if not okd or type(p) ~= 'table' or type(p.status) ~= 'string' or not statuses[p.status] then
    return false, 'presence JSON does not decode or has an unknown status'
  end
  local last = type(p.lastSeen) == 'number' and time_ok(p.lastSeen, now)
  if not last then return false, 'lastSeen is not a time in [0, server time + 1h]' end
  local out = {status = p.status, last = last, device = '', activity = ''}
  if type(p.metadata) == 'table' then
    if type(p.metadata.device) == 'string' then out.device = p.metadata.device end
    if type(p.metadata.lastActivity) == 'string' then out.activity = p.metadata.lastActivity end
  end
  if single and p.connections ~= nil then
    if type(p.connections) ~= 'table' then return false, 'connections is not an object' end
    out.conns = p.connections
  end
  return out
end

-- conns_json is the "connections" member of the single-key layout: the
-- live connections by ID ('' for the hash layout).
local function conns_json(live, vals)
  if not single then return '' end
  local cs = {}
  for f in pairs(live) do cs[f] = vals[f] end
  return ',"connections":' .. unslash(cjson.encode(cs))
end

-- presence_json encodes the presence value; conns is conns_json's output
-- (or ''), written last so that readers can stop before it.
local function presence_json(fmt, user, status, last, count, device, activity, conns)
  if fmt == 'compact' then
    return '{"userId":' .. json_str(user) .. ',"status":"' .. status .. '","lastSeen":' .. int_str(last) .. conns .. '}'
  end
  local s = '{"status":"' .. status .. '","lastSeen":' .. int_str(last) .. ',"activeConnections":' .. count
  local md = {}
  if device ~= '' then md[#md + 1] = '"device":' .. json_str(device) end
  if activity ~= '' then md[#md + 1] = '"lastActivity":' .. json_str(activity) end
  if #md > 0 then s = s .. ',"metadata":{' .. table.concat(md, ',') .. '}' end
  return s .. conns .. '}'
end

-- load reads the user's presence and live connections, pruning stale ones
-- when write (a read-only caller with the hash layout does not need, so does
-- not read, the presence). It returns a corrupt reply for the script to
-- return, or nil, the presence (nil if absent) and prune's four results.
local function load(now, write)
  local p = nil
  if write or single then
    local why
    p, why = read_presence(KEYS[1], now)
    if p == false then return corrupt(1, why) end
  end
  local live, n, maxDead, vals = prune(p, now, tonumber(ARGV[4]), write)
  if not live then
    local why = string.format('connection %q has no lastSeen in [0, server time + 1h]', n)
    if single then return corrupt(1, why) end
    return corrupt(2, why)
  end
  return nil, p, live, n, maxDead, vals
end

-- current returns the status and activity an online user keeps: p's, or
-- online and none for a user who is offline or absent.
local function current(p)
  local status, activity = 'online', ''
  if p then
    if p.status ~= 'offline' then status = p.status end
    activity = p.activity
  end
  return status, activity
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
    redis.call('SET', KEYS[1], presence_json(fmt, user, status, last, n, device, activity, conns_json(live, vals)), 'PX', int_str(px))
    if not single then redis.call('PEXPIRE', KEYS[2], int_str(px)) end
    if status == 'invisible' then
      -- coming back invisible after a silent expiry nobody announced yet:
      -- others still see the user online, so announce it now
      if was == 'offline' then announce_pending(KEYS[3], user, now) end
      index(KEYS[3], user, nil, now)
    else
      index(KEYS[3], user, last + ttl + status_frac[status], now)
    end
    publish(ARGV[6], user, was, status, now)
    return status, was == 'offline'
  end
  -- already offline: the index member, if any, is a silent expiry (pending
  -- for the sweeper, or announced and keeping last seen) and stays
  if was == 'offline' then return 'offline', false end
  index(KEYS[3], user, nil, now)
  if retention > 0 then
    redis.call('SET', KEYS[1], presence_json(fmt, user, 'offline', seen, 0, p.device, '', ''), 'PX', int_str(retention))
  else
    redis.call('DEL', KEYS[1])
  end
  publish(ARGV[6], user, was, 'offline', now)
  return 'offline', true
end
