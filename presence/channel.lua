-- channel.lua: the presence package's library for channel presence, put
-- before channel_join.lua, channel_leave.lua, channel_heartbeat.lua,
-- channel_update.lua and channel_settle.lua, which share this layout. Every
-- key carries the channel's hash tag (the due shard is the one of the
-- channel's slot), so a script on one channel is one slot on a cluster.
--
-- KEYS[1] presence:channel:{channel}          members: user ID -> "<devices>:<data JSON>" (hash)
-- KEYS[2] presence:channel:devices:{channel}  devices: "<len(user)>:<user><conn>" scored by expiry ms (zset)
-- KEYS[3] presence:channel:occupancy:{channel} last occupancy event: "<at ms>:<count>" (string)
-- KEYS[4] presence:channel:due:{slot}         channels of the slot scored by when a sweep is due (zset)
-- KEYS[5] presence:channel:requests:{channel}:{user_id} request memo (see
--         replay.lua); not passed to channel_heartbeat.lua and channel_settle.lua
-- ARGV[1] channel ID (the due shard's member)
-- ARGV[2] events channel of this channel
-- ARGV[3] device TTL, ms
-- ARGV[4] sweep window, ms
-- ARGV[5] occupancy event interval, ms (0: no occupancy events)
-- ARGV[6] user ID ("" for channel_settle.lua)
-- ARGV[7] connection (device) ID ("" where unused)
-- ARGV[8] request ID ("" where unused)
-- ARGV[9...] operation-specific
--
-- A user is a member while at least one of their devices is in KEYS[2];
-- the member value counts them. Every transition of a user between member
-- and not member happens in one of these scripts, which publishes its
-- event in the same atomic step: so each join and each leave is announced
-- exactly once, whoever (a Leave, a later write, a sweep) finds it.

local CH_TTL, CH_WINDOW, CH_OCC = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])

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
-- "timeout"): the last one ends the membership, with its leave event.
-- It returns 1 if the user left, 0 if not, or false, having written
-- nothing, if the member value is corrupt.
local function device_gone(user, reason, now)
  local n, data = member_get(user)
  if n == false then return false end
  if n <= 1 then
    redis.call('HDEL', KEYS[1], user)
    if n == 1 then
      ch_event('leave', user, ',"reason":"' .. reason .. '"', now)
      return 1
    end
    return 0
  end
  redis.call('HSET', KEYS[1], user, (n - 1) .. ':' .. data)
  return 0
end

-- preflight reads the keys a script writes only after other writes (the
-- occupancy record, the due shard), so that a key of a foreign type fails
-- the script (WRONGTYPE, reported as corrupt) before it writes anything.
local function preflight()
  redis.call('GET', KEYS[3])
  redis.call('ZSCORE', KEYS[4], ARGV[1])
end

-- settle_expired removes devices whose expiry has passed (at most
-- SETTLE_LIMIT), announcing the silent leaves it completes. It returns the
-- number of users who left, or nil and a corrupt reply.
local function settle_expired(now)
  local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', int_str(now), 'LIMIT', '0', SETTLE_LIMIT)
  local left = 0
  for i = 1, #due do
    local user = dev_user(due[i])
    if user then
      local l = device_gone(user, 'timeout', now)
      if l == false then return nil, corrupt(1, MEMBER_CORRUPT) end
      left = left + l
    end
    redis.call('ZREM', KEYS[2], due[i])
  end
  return left
end

-- occupancy publishes the member count if it differs from the last one
-- published and the interval since that one has passed; otherwise, if it
-- differs, it returns when the event is due.
local function occupancy(now)
  if CH_OCC <= 0 then return nil end
  local n = redis.call('HLEN', KEYS[1])
  local at, cnt = nil, 0
  local v = redis.call('GET', KEYS[3])
  if v then
    local a, c = string.match(v, '^(%d+):(%d+)$')
    if a then at, cnt = tonumber(a), tonumber(c) end
  end
  if cnt == n then return nil end
  if at and now < at + CH_OCC then return at + CH_OCC end
  if ARGV[2] ~= '' then
    redis.call('PUBLISH', ARGV[2], '{"type":"occupancy","count":' .. n .. ',"at":' .. int_str(now) .. '}')
  end
  redis.call('SET', KEYS[3], int_str(now) .. ':' .. n, 'PX', int_str(math.max(2 * CH_OCC, CH_WINDOW)))
  return nil
end

-- schedule puts the channel in its slot's due shard at the earliest of its
-- first device expiry and a pending occupancy event (occ_due), or takes it
-- out, and sets the TTLs: the channel's keys live a sweep window past the
-- last device expiry, so a sweep finds every silent leave.
local function schedule(now, occ_due)
  local first = redis.call('ZRANGE', KEYS[2], '0', '0', 'WITHSCORES')
  local due = first[2] and tonumber(first[2])
  if occ_due and (not due or occ_due < due) then due = occ_due end
  if due then
    redis.call('ZADD', KEYS[4], int_str(due), ARGV[1])
    local px = math.max(1, due + CH_WINDOW - now)
    if redis.call('PTTL', KEYS[4]) < px then redis.call('PEXPIRE', KEYS[4], int_str(px)) end
  else
    redis.call('ZREM', KEYS[4], ARGV[1])
  end
  local last = redis.call('ZRANGE', KEYS[2], '-1', '-1', 'WITHSCORES')
  local px = (occ_due or now) + CH_WINDOW - now
  if last[2] then
    px = math.max(px, tonumber(last[2]) + CH_WINDOW - now)
    redis.call('PEXPIRE', KEYS[1], int_str(px))
    redis.call('PEXPIRE', KEYS[2], int_str(px))
  else
    redis.call('DEL', KEYS[1])
  end
  if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('PEXPIRE', KEYS[3], int_str(math.max(px, 2 * CH_OCC))) end
end
