-- lib.lua: the presence package's library, sent verbatim after the
-- shared prelude and before every script that uses it (call.Uses): the
-- helpers two or more of its scripts share. Its four parts:
--
--   the online index and the events channel (connect, heartbeat,
--   disconnect, update, connections, sweep);
--   a user's presence and connections (connect, heartbeat, disconnect,
--   update, connections);
--   request memos (every script whose outcome depends on the state it
--   finds: connect, disconnect, update, heartbeat, sweep, typing_start,
--   typing_stop, channel_join, channel_leave, channel_update);
--   channel presence (channel_join, channel_leave, channel_heartbeat,
--   channel_update, channel_settle).
--
-- It defines helpers only: its top level reads nothing but ARGV[8] (the
-- layout of the user scripts) and writes nothing. It returns nothing.
--
-- The scripts on a user's keys (connect, heartbeat, disconnect, update,
-- connections; sweep takes ARGV[4..11]) share this KEYS and ARGV layout,
-- which the first two parts read:
--
-- KEYS[1] presence:{user_id}        presence JSON (string)
-- KEYS[2] connections:{user_id}     connection ID -> connection JSON (hash);
--                                   never touched with the single-key layout
-- KEYS[3] presence:online:{slot}    online index shard of the user's slot (zset)
-- KEYS[4] presence:requests:{user_id} request memo; not passed to
--                                   connections.lua
-- ARGV[1]  user ID
-- ARGV[2]  connection ID ("" for update.lua and connections.lua)
-- ARGV[3]  format: "detailed" or "compact"
-- ARGV[4]  presence TTL while online, ms (also the connection staleness bound)
-- ARGV[5]  offline retention, ms (0: delete the presence key on going offline)
-- ARGV[6]  events channel
-- ARGV[7]  "1" to maintain the online index, "0" not to touch it
-- ARGV[8]  layout: "hash" (connections in KEYS[2]) or "single" (connections
--          in the presence JSON's last member, "connections": {ID:
--          [connectedAt, lastSeen, metadata], ...})
-- ARGV[9]  clock skew bound, ms: a stored time further ahead of the
--          server clock was not written by this package
-- ARGV[10] replay window, ms: how long a request memo keeps a request
-- ARGV[11] request ID, 16 hex digits ("" for read-only scripts)
-- ARGV[12...] operation-specific
--
-- Times are Unix ms of the server clock. A stored time this package did
-- not write (not an integer, negative, or more than ARGV[9] ms after now)
-- is corrupt: {'corrupt', i, why} names the key.

-- ==== The online index and the events channel (the user layout above)
--
-- The online index shard (KEYS[3] of the tracker scripts) holds, per
-- visible user, a score that is the presence expiry in ms plus a fraction
-- naming the public status the user had (online .0, away .25, busy .5), so
-- that a silent expiry can be announced later with the right "previous". A
-- positive score <= now is a silent expiry not yet announced (pending);
-- sweep.lua announces it and negates the score. Writes keep pending members
-- for the sweep window (the retention, or the TTL when the retention is 0)
-- and announced ones for the retention, so that the last seen time of a
-- user whose devices all died silently can still be read (|score| - TTL).

local status_frac = {online = 0, away = 0.25, busy = 0.5}

local function score_status(s)
  local f = math.abs(s) - math.floor(math.abs(s))
  if f >= 0.375 then return 'busy' end
  if f >= 0.125 then return 'away' end
  return 'online'
end

local function fmt_score(s) return string.format('%.2f', s) end

local function sweep_window()
  local r = tonumber(ARGV[5])
  if r > 0 then return r end
  return tonumber(ARGV[4])
end

-- prune_index drops pending members past the sweep window and announced
-- ones past the retention.
local function prune_index(key, now)
  redis.call('ZREMRANGEBYSCORE', key, '0', int_str(now - sweep_window()))
  redis.call('ZREMRANGEBYSCORE', key, int_str(tonumber(ARGV[5]) - now), '(0')
end

-- repair_index drops members whose score no script of this package writes
-- (further from zero than now + TTL + the skew bound): data from
-- elsewhere must neither list a user forever nor keep the shard alive.
local function repair_index(key, now)
  local far = int_str(now + tonumber(ARGV[4]) + tonumber(ARGV[9]) + 1)
  redis.call('ZREMRANGEBYSCORE', key, '(' .. far, '+inf')
  redis.call('ZREMRANGEBYSCORE', key, '-inf', '(-' .. far)
end

-- expire_index sets the shard's TTL to what its members need.
local function expire_index(key, now)
  repair_index(key, now)
  local top = redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')
  if not top[2] then return end
  local ttl = 0
  local s = tonumber(top[2])
  if s > 0 then ttl = s + sweep_window() - now end
  local bot = redis.call('ZRANGE', key, '0', '0', 'WITHSCORES')
  local b = tonumber(bot[2])
  if b < 0 then ttl = math.max(ttl, -b + tonumber(ARGV[5]) - now) end
  redis.call('PEXPIRE', key, int_str(math.max(1, math.ceil(ttl))))
end

-- index adds user with score, their presence expiry plus the status
-- fraction (nil: removes them), prunes the shard and sets its TTL.
local function index(key, user, score, now)
  if ARGV[7] ~= '1' then return end
  if score then
    redis.call('ZADD', key, fmt_score(score), user)
  else
    redis.call('ZREM', key, user)
  end
  prune_index(key, now)
  if score and score >= now + tonumber(ARGV[4]) then
    -- no member of this profile needs the shard longer than this one
    redis.call('PEXPIRE', key, int_str(math.ceil(score + sweep_window() - now)))
    return
  end
  expire_index(key, now)
end

local function public(status)
  if status == 'invisible' then return 'offline' end
  return status
end

-- publish sends the event of user's public status going from prev to cur
-- at time at (ms) on channel ch, unless it did not change.
local function publish(ch, user, prev, cur, at)
  prev, cur = public(prev), public(cur)
  if ch ~= '' and prev ~= cur then
    redis.call('PUBLISH', ch, '{"userId":' .. json_str(user) .. ',"status":"' .. cur ..
      '","previous":"' .. prev .. '","at":' .. int_str(at) .. '}')
  end
end

-- announce_pending publishes the offline event of user's silent expiry if
-- the index holds one not yet announced (see sweep.lua): "at" is the expiry.
local function announce_pending(key, user, now)
  if ARGV[7] ~= '1' then return end
  local s = redis.call('ZSCORE', key, user)
  s = s and tonumber(s)
  if s and s > 0 and s < now then
    publish(ARGV[6], user, score_status(s), 'offline', math.floor(s))
  end
end

-- ==== A user's presence and connections (the user layout above)

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
-- an integer in [0, now + the skew bound]; else nil.
local function time_ok(x, now)
  if type(x) == 'string' then x = to_int(x) end
  if type(x) ~= 'number' or x ~= math.floor(x) or x < 0 or x > now + tonumber(ARGV[9]) then return nil end
  return x
end

-- LAST_SEEN finds a connection JSON's lastSeen and captures its number.
local LAST_SEEN = '("lastSeen"%s*:%s*)([%-%d%.eE%+]+)'

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

-- The hash layout's connection writes wait for settle(): the deletions
-- of stale connections prune decides on (and a Disconnect's, in
-- conn_dels) and put_conn's write. settle() makes them after its first
-- command on the online index shard (ZADD or ZREM), which fails the script
-- on a shard of a foreign type (WRONGTYPE) before anything is written.
-- With the single-key layout settle() writes the whole value.
local conn_dels, conn_put = {}, nil

-- prune loads the user's connections (p is the presence read_presence
-- returned, used with the single-key layout) and drops those whose lastSeen
-- is ttl old: with write and the hash layout settle() deletes them; with
-- the single-key layout it rewrites the value without them. It returns a
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
  if write and not single then
    for i = 1, #dead do conn_dels[#conn_dels + 1] = dead[i] end
  end
  return live, n, maxDead, vals
end

-- put_conn writes one connection with the hash layout, at settle(); with
-- the single-key layout settle() writes the whole value.
local function put_conn(conn, v)
  if not single then conn_put = {conn, v} end
end

-- write_conns makes the connection writes that wait for settle().
local function write_conns()
  if #conn_dels > 0 then batched('HDEL', KEYS[2], conn_dels) end
  if conn_put then redis.call('HSET', KEYS[2], conn_put[1], conn_put[2]) end
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
    if p == false then return {'corrupt', 1, why} end
  end
  local live, n, maxDead, vals = prune(p, now, tonumber(ARGV[4]), write)
  if not live then
    local why = string.format('connection %q has no lastSeen in [0, server time + 1h]', n)
    if single then return {'corrupt', 1, why} end
    return {'corrupt', 2, why}
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
--
-- The index comes first: the load before it read the presence and the
-- connections (so their types are checked), and its ZADD or ZREM fails
-- the script on a shard of a foreign type before anything is written;
-- then the connection writes that waited for it, the presence, the event.
local function settle(p, live, vals, prefer, n, status, activity, seen, now)
  local fmt, ttl, retention, user = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[1]
  local was = 'offline'
  if p and p.status ~= 'offline' then was = p.status end
  if n > 0 then
    local last = 0
    for _, l in pairs(live) do if l > last then last = l end end
    if status == 'invisible' then
      -- coming back invisible after a silent expiry nobody announced yet:
      -- others still see the user online, so announce it now
      if was == 'offline' then announce_pending(KEYS[3], user, now) end
      index(KEYS[3], user, nil, now)
    else
      index(KEYS[3], user, last + ttl + status_frac[status], now)
    end
    write_conns()
    local device = freshest(live, vals, prefer)
    local px = math.max(1, last + ttl - now)
    redis.call('SET', KEYS[1], presence_json(fmt, user, status, last, n, device, activity, conns_json(live, vals)), 'PX', int_str(px))
    if not single then redis.call('PEXPIRE', KEYS[2], int_str(px)) end
    publish(ARGV[6], user, was, status, now)
    return status, was == 'offline'
  end
  -- already offline: the index member, if any, is a silent expiry (pending
  -- for the sweeper, or announced and keeping last seen) and stays
  if was == 'offline' then
    write_conns()
    return 'offline', false
  end
  index(KEYS[3], user, nil, now)
  write_conns()
  if retention > 0 then
    redis.call('SET', KEYS[1], presence_json(fmt, user, 'offline', seen, 0, p.device, '', ''), 'PX', int_str(retention))
  else
    redis.call('DEL', KEYS[1])
  end
  publish(ARGV[6], user, was, 'offline', now)
  return 'offline', true
end

-- ==== Request memos
--
-- go-redis resends a command whose reply was lost after the server ran it,
-- and a whole pipeline after a cut connection, so one request can run
-- twice. The caller draws a request ID (16 hex digits) before the first
-- send; the first run records its reply under it, and a second run of the
-- same request finds that reply and returns it without acting again.
--
-- A memo is a sorted set per entity (a user; a user in a channel; a user
-- in a conversation; an online-index shard's sweeps) scored by server time
-- (ms): two members per request with the time of its first run, the
-- request ID and "<request ID>=<field>,<field>,..." (its reply; fields are
-- status words and decimal integers). Each record drops the members older
-- than the replay window (each script's ARGV carries it) and keeps the
-- memo for the window, so a resend is recognised for the window after the
-- first run however many other requests ran on the entity meanwhile, and
-- a memo holds the requests of the last window.

-- REPLAY_CORRUPT is the reason given for a memo entry this package did
-- not write.
local REPLAY_CORRUPT = 'a request ID without its "<ID>=<fields>" reply'

-- replayed returns the reply recorded at key for request id: nil when
-- there is none (or id is ''), false when key holds the ID without a
-- reply this package wrote.
local function replayed(key, id)
  if id == '' then return nil end
  local at = redis.call('ZSCORE', key, id)
  if not at then return nil end
  local pre, body = id .. '=', nil
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', key, at, at)) do
    if string.sub(m, 1, #pre) == pre then
      body = string.sub(m, #pre + 1)
      break
    end
  end
  if not body or not string.match(body, '^[%w%-]+[%w,%-]*$') then return false end
  local rep = {}
  for f in string.gmatch(body, '[^,]+') do rep[#rep + 1] = f end
  return rep
end

-- remember records rep (a reply whose elements are words and integers) as
-- request id's at key, at now (server ms), drops the entries older than
-- window (the replay window in ms, a decimal string), keeps the memo for
-- window and returns rep.
local function remember(key, id, rep, now, window)
  if id == '' then return rep end
  local parts = {}
  for i = 1, #rep do
    local x = rep[i]
    if type(x) == 'number' then x = int_str(x) end
    parts[i] = x
  end
  local t = int_str(now)
  redis.call('ZADD', key, t, id, t, id .. '=' .. table.concat(parts, ','))
  redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. int_str(now - tonumber(window)))
  redis.call('PEXPIRE', key, window)
  return rep
end

-- ==== Channel presence
--
-- The channel scripts (channel_join, channel_leave, channel_heartbeat,
-- channel_update, channel_settle) share this layout. Every key carries
-- the channel's hash tag (the due shard is the one of the channel's slot),
-- so a script on one channel is one slot on a cluster.
--
-- KEYS[1] presence:channel:{channel}          members: user ID -> "<devices>:<data JSON>" (hash)
-- KEYS[2] presence:channel:devices:{channel}  devices: "<len(user)>:<user><conn>" scored by expiry ms (zset)
-- KEYS[3] presence:channel:occupancy:{channel} last occupancy event: "<at ms>:<count>" (string)
-- KEYS[4] presence:channel:due:{slot}         channels of the slot scored by when a sweep is due (zset)
-- KEYS[5] presence:channel:requests:{channel}:{user_id} request memo; not
--         passed to channel_heartbeat.lua and channel_settle.lua
-- ARGV[1] channel ID (the due shard's member)
-- ARGV[2] events channel of this channel
-- ARGV[3] device TTL, ms
-- ARGV[4] sweep window, ms
-- ARGV[5] occupancy event interval, ms (0: no occupancy events)
-- ARGV[6] user ID ("" for channel_settle.lua)
-- ARGV[7] connection (device) ID ("" where unused)
-- ARGV[8] request ID ("" where unused)
-- ARGV[9] replay window, ms
-- ARGV[10...] operation-specific
--
-- A user is a member while at least one of their devices is in KEYS[2];
-- the member value counts them. Every transition of a user between member
-- and not member happens in one of these scripts, which publishes its
-- event in the same atomic step: so each join and each leave is announced
-- exactly once, whoever (a Leave, a later write, a sweep) finds it.

-- SETTLE_LIMIT bounds the expired devices one script removes.
local SETTLE_LIMIT = 256

local function dev_member(user, conn) return #user .. ':' .. user .. conn end

-- dev_user returns the user ID a device member names, or nil.
local function dev_user(m)
  local n, at = string.match(m, '^(%d+):()')
  if not n then return nil end
  n = tonumber(n)
  if at + n - 1 > #m then return nil end
  return string.sub(m, at, at + n - 1)
end

-- member_get returns a user's device count and data JSON (0 and nil for a
-- non-member), or false for a value this package did not write.
local function member_get(user)
  local v = redis.call('HGET', KEYS[1], user)
  if not v then return 0, nil end
  local n, data = string.match(v, '^(%d+):(.*)$')
  n = n and tonumber(n)
  if not n or n < 1 or data == '' then return false end
  return n, data
end

local MEMBER_CORRUPT = 'member value is not "<devices>:<data JSON>"'

local function ch_event(kind, user, tail, now)
  if ARGV[2] == '' then return end
  redis.call('PUBLISH', ARGV[2], '{"type":"' .. kind .. '","userId":' .. json_str(user) .. tail .. ',"at":' .. int_str(now) .. '}')
end

-- device_gone accounts for one removed device of user (reason "leave" or
-- "timeout"), whose member value member_get read as n devices and data:
-- the last one ends the membership, with its leave event. It returns the
-- devices left and 1 if the user left, else 0 (a non-member stays one:
-- nothing to write).
local function device_gone(user, n, data, reason, now)
  if n == 0 then return 0, 0 end
  if n == 1 then
    redis.call('HDEL', KEYS[1], user)
    ch_event('leave', user, ',"reason":"' .. reason .. '"', now)
    return 0, 1
  end
  redis.call('HSET', KEYS[1], user, (n - 1) .. ':' .. data)
  return n - 1, 0
end

-- preflight reads the keys a script writes only after other writes (the
-- occupancy record, the due shard), so that a key of a foreign type fails
-- the script (WRONGTYPE, reported as corrupt) before it writes anything.
local function preflight()
  redis.call('GET', KEYS[3])
  redis.call('ZSCORE', KEYS[4], ARGV[1])
end

-- settle_expired removes devices whose expiry has passed (at most
-- SETTLE_LIMIT), announcing the silent leaves it completes. user (nil for
-- none) is the member the calling script reads next. One pass reads and
-- checks the member value of every user it touches, and user's, before
-- the first write, so that a corrupt one fails the script having written
-- nothing; a second makes the writes, device by device. It returns the
-- number of users who left, nil, and user's devices and data as the settle
-- leaves them (0 and nil for a non-member); or nil and a corrupt reply.
local function settle_expired(now, user)
  local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', int_str(now), 'LIMIT', '0', SETTLE_LIMIT)
  -- who[i] is the user of due[i] (false for a member that names none),
  -- who[#due + 1] the caller's
  local who = {}
  for i = 1, #due do who[i] = dev_user(due[i]) or false end
  who[#due + 1] = user or false
  -- the reads: each member value once (cnt and dat as member_get gives them)
  local cnt, dat = {}, {}
  for _, u in ipairs(who) do
    if u and cnt[u] == nil then
      local n, data = member_get(u)
      if n == false then return nil, {'corrupt', 1, MEMBER_CORRUPT} end
      cnt[u], dat[u] = n, data
    end
  end
  -- the writes, in the order of the devices' expiries
  local left = 0
  for i = 1, #due do
    local u = who[i]
    if u then
      local l
      cnt[u], l = device_gone(u, cnt[u], dat[u], 'timeout', now)
      if cnt[u] == 0 then dat[u] = nil end
      left = left + l
    end
    redis.call('ZREM', KEYS[2], due[i])
  end
  if user then return left, nil, cnt[user], dat[user] end
  return left
end

-- occupancy publishes the member count if it differs from the last one
-- published and the interval since that one has passed; otherwise, if it
-- differs, it returns when the event is due.
local function occupancy(now)
  local every = tonumber(ARGV[5])
  if every <= 0 then return nil end
  local n = redis.call('HLEN', KEYS[1])
  local at, cnt = nil, 0
  local v = redis.call('GET', KEYS[3])
  if v then
    local a, c = string.match(v, '^(%d+):(%d+)$')
    if a then at, cnt = tonumber(a), tonumber(c) end
  end
  if cnt == n then return nil end
  if at and now < at + every then return at + every end
  if ARGV[2] ~= '' then
    redis.call('PUBLISH', ARGV[2], '{"type":"occupancy","count":' .. n .. ',"at":' .. int_str(now) .. '}')
  end
  redis.call('SET', KEYS[3], int_str(now) .. ':' .. n, 'PX', int_str(math.max(2 * every, tonumber(ARGV[4]))))
  return nil
end

-- schedule puts the channel in its slot's due shard at the earliest of its
-- first device expiry and a pending occupancy event (occ_due), or takes it
-- out, and sets the TTLs: the channel's keys live a sweep window past the
-- last device expiry, so a sweep finds every silent leave.
local function schedule(now, occ_due)
  local window, every = tonumber(ARGV[4]), tonumber(ARGV[5])
  local first = redis.call('ZRANGE', KEYS[2], '0', '0', 'WITHSCORES')
  local due = first[2] and tonumber(first[2])
  if occ_due and (not due or occ_due < due) then due = occ_due end
  if due then
    redis.call('ZADD', KEYS[4], int_str(due), ARGV[1])
    local px = math.max(1, due + window - now)
    if redis.call('PTTL', KEYS[4]) < px then redis.call('PEXPIRE', KEYS[4], int_str(px)) end
  else
    redis.call('ZREM', KEYS[4], ARGV[1])
  end
  local last = redis.call('ZRANGE', KEYS[2], '-1', '-1', 'WITHSCORES')
  local px = (occ_due or now) + window - now
  if last[2] then
    px = math.max(px, tonumber(last[2]) + window - now)
    redis.call('PEXPIRE', KEYS[1], int_str(px))
    redis.call('PEXPIRE', KEYS[2], int_str(px))
  else
    redis.call('DEL', KEYS[1])
  end
  if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('PEXPIRE', KEYS[3], int_str(math.max(px, 2 * every))) end
end
