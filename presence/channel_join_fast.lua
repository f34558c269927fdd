-- channel_join_fast.lua: a join of a new device when nothing in the
-- channel is due, the common case, in as few commands as it takes. It is
-- the join's head (call.Head): it runs first, before the prelude and
-- lib.lua, uses none of their helpers and builds no table. Anything it
-- does not recognise as its case falls through, having written nothing,
-- to the general join (channel_join.lua), which handles it exactly as
-- before.
--
-- KEYS[1..5] and ARGV[1..11] as channel_join.lua takes them.
-- Returns, in its case, "ok <joined> <devices> <members>" ({'ok', joined,
-- devices, members} as words, recorded in the request memo as
-- channel_join.lua records it); otherwise nothing: the general join runs.
--
-- The case: not a replay; the channel either has an entry in its slot's
-- due shard later than now (every script that adds a device or changes
-- the member count reschedules the channel at the earliest of its first
-- device expiry and its pending occupancy event, and heartbeats only push
-- expiries later: so no device has expired and no occupancy event is
-- pending whose interval has ended), or has no entry, no members and no
-- devices (nothing to settle); the device is new in the channel; the
-- user's member value, if any, as this package writes it, with fewer
-- devices than the maximum; the occupancy record, if any, as this
-- package writes it; a user ID JSON needs no escapes for. Then
-- settle_expired finds nothing and the join is its reads (all before the
-- first write, so a key of a foreign type fails it before it writes),
-- the device and member writes, its event, the occupancy event if one is
-- due, the due entry only where it moves earlier (the shard's TTL already
-- covers a later one; a new entry sets it as schedule does), the TTLs of
-- the channel's keys (the TTL plus the sweep window past the device's
-- expiry, as a heartbeat sets them) and the request memo.
--
-- Why a twin: its bench row, BenchmarkPresenceCentrifuge/channel-join/
-- redschema, costs the server 378k instructions per join without this
-- head (callgrind, 2026-11-30; see "What a heartbeat and a join cost" in
-- docs/presence.md for the figure with it).
local user, id = ARGV[6], ARGV[8]
if id ~= '' and not string.find(user, '[%c"\\]') and not redis.call('ZSCORE', KEYS[5], id) then
  local fmt = string.format
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local due = redis.call('ZSCORE', KEYS[4], ARGV[1])
  due = due and tonumber(due)
  local dev = #user .. ':' .. user .. ARGV[7]
  local ok = due and due > now
  if not due then ok = redis.call('EXISTS', KEYS[1], KEYS[2]) == 0 end
  if ok and not redis.call('ZSCORE', KEYS[2], dev) then
    local n, data = 0, nil
    local v = redis.call('HGET', KEYS[1], user)
    if v then
      n, data = string.match(v, '^(%d+):(.+)$')
      n = n and tonumber(n)
      if n and n < 1 then n = nil end
    end
    local every = tonumber(ARGV[5])
    local rec, at, cnt = redis.call('GET', KEYS[3]), nil, 0
    if rec then
      at, cnt = string.match(rec, '^(%d+):(%d+)$')
      at, cnt = tonumber(at), tonumber(cnt)
    end
    if n and n < tonumber(ARGV[11]) and (not rec or at) then
      local members = redis.call('HLEN', KEYS[1])
      local ttl, window, new = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[10]
      local nows = fmt('%d', now)
      redis.call('ZADD', KEYS[2], fmt('%d', now + ttl), dev)
      redis.call('HSET', KEYS[1], user, (n + 1) .. ':' .. new)
      local joined = 0
      if n == 0 then
        joined, members = 1, members + 1
        if ARGV[2] ~= '' then
          redis.call('PUBLISH', ARGV[2], '{"type":"join","userId":"' .. user .. '","data":' .. new .. ',"at":' .. nows .. '}')
        end
      elseif data ~= new and ARGV[2] ~= '' then
        redis.call('PUBLISH', ARGV[2], '{"type":"update","userId":"' .. user .. '","data":' .. new .. ',"at":' .. nows .. '}')
      end
      -- occupancy (lib.lua's occupancy)
      local occ = nil
      if every > 0 and cnt ~= members then
        if at and now < at + every then
          occ = at + every
        else
          if ARGV[2] ~= '' then
            redis.call('PUBLISH', ARGV[2], '{"type":"occupancy","count":' .. members .. ',"at":' .. nows .. '}')
          end
          redis.call('SET', KEYS[3], nows .. ':' .. members, 'PX', fmt('%d', math.max(2 * every, window)))
          rec = true
        end
      end
      -- schedule (lib.lua's schedule, knowing the device's expiry is now + ttl)
      local nd = now + ttl
      if occ and occ < nd then nd = occ end
      if not due then
        redis.call('ZADD', KEYS[4], fmt('%d', nd), ARGV[1])
        local px = math.max(1, nd + window - now)
        if redis.call('PTTL', KEYS[4]) < px then redis.call('PEXPIRE', KEYS[4], fmt('%d', px)) end
      elseif nd < due then
        redis.call('ZADD', KEYS[4], fmt('%d', nd), ARGV[1])
      end
      local px = math.max(occ or now, now + ttl) + window - now
      redis.call('PEXPIRE', KEYS[1], fmt('%d', px))
      redis.call('PEXPIRE', KEYS[2], fmt('%d', px))
      if rec then redis.call('PEXPIRE', KEYS[3], fmt('%d', math.max(px, 2 * every))) end
      -- the request memo (lib.lua's remember)
      redis.call('ZADD', KEYS[5], nows, id, nows, id .. '=ok,' .. joined .. ',' .. (n + 1) .. ',' .. members)
      redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', '(' .. fmt('%d', now - tonumber(ARGV[9])))
      redis.call('PEXPIRE', KEYS[5], ARGV[9])
      return 'ok ' .. joined .. ' ' .. (n + 1) .. ' ' .. members
    end
  end
end
