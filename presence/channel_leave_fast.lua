-- channel_leave_fast.lua: a leave of a device that is in the channel when
-- nothing in the channel is due, the common case, in as few commands as it
-- takes. It is the leave's head (call.Head): it runs first, before the
-- prelude and lib.lua, uses none of their helpers and builds no table.
-- Anything it does not recognise as its case falls through, having written
-- nothing, to the general leave (channel_leave.lua), which handles it
-- exactly as before.
--
-- KEYS[1..5] and ARGV[1..9] as channel_leave.lua takes them.
-- Returns, in its case, "ok <left> <devices> <members>" ({'ok', left,
-- devices, members} as words, recorded in the request memo as
-- channel_leave.lua records it); otherwise nothing: the general leave
-- runs.
--
-- The case: not a replay; the channel's entry in its slot's due shard is
-- later than now (so no device has expired and no occupancy event is
-- pending whose interval has ended: see channel_join_fast.lua); the device
-- is in the channel; the user's member value as this package writes it;
-- the occupancy record, if any, as this package writes it; a user ID JSON
-- needs no escapes for; and, if this is the channel's last member, its
-- last device. Then settle_expired finds nothing and the leave is its
-- reads (all before the first write), the member and device writes, the
-- leave event, the occupancy event if one is due, and schedule's work
-- knowing what changed: a device gone leaves the due entry early enough
-- and the keys' TTLs long enough (as they were set past every device's
-- expiry), so only a pending occupancy event moves the entry earlier and
-- the TTLs later; the last device gone takes the channel out of the due
-- shard (or puts it in at its pending occupancy event); and the request
-- memo.
--
-- Why a twin: its bench row, BenchmarkPresenceCentrifuge/channel-join-leave/
-- redschema, costs the server 696k instructions per join and leave
-- without this head and channel_join_fast.lua (callgrind, 2026-11-30; see
-- "What a heartbeat and a join cost" in docs/presence.md for the figure
-- with them).
local user, id = ARGV[6], ARGV[8]
if id ~= '' and not string.find(user, '[%c"\\]') and not redis.call('ZSCORE', KEYS[5], id) then
  local fmt = string.format
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local due = redis.call('ZSCORE', KEYS[4], ARGV[1])
  due = due and tonumber(due)
  local dev = #user .. ':' .. user .. ARGV[7]
  if due and due > now and redis.call('ZSCORE', KEYS[2], dev) then
    local v = redis.call('HGET', KEYS[1], user)
    local n, data = string.match(v or '', '^(%d+):(.+)$')
    n = n and tonumber(n)
    local every = tonumber(ARGV[5])
    local rec, at, cnt = redis.call('GET', KEYS[3]), nil, 0
    if rec then
      at, cnt = string.match(rec, '^(%d+):(%d+)$')
      at, cnt = tonumber(at), tonumber(cnt)
    end
    local members = n and n >= 1 and (not rec or at) and redis.call('HLEN', KEYS[1])
    local empty = members == 1 and n == 1
    if members and (not empty or redis.call('ZCARD', KEYS[2]) == 1) then
      local window, nows = tonumber(ARGV[4]), fmt('%d', now)
      local left = 0
      if n == 1 then
        redis.call('HDEL', KEYS[1], user)
        left, members = 1, members - 1
        if ARGV[2] ~= '' then
          redis.call('PUBLISH', ARGV[2], '{"type":"leave","userId":"' .. user .. '","reason":"leave","at":' .. nows .. '}')
        end
      else
        redis.call('HSET', KEYS[1], user, (n - 1) .. ':' .. data)
      end
      redis.call('ZREM', KEYS[2], dev)
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
      -- schedule (lib.lua's schedule, knowing what changed)
      local px
      if empty then
        if occ then
          redis.call('ZADD', KEYS[4], fmt('%d', occ), ARGV[1])
          local dpx = math.max(1, occ + window - now)
          if redis.call('PTTL', KEYS[4]) < dpx then redis.call('PEXPIRE', KEYS[4], fmt('%d', dpx)) end
        else
          redis.call('ZREM', KEYS[4], ARGV[1])
        end
        px = (occ or now) + window - now
      else
        if occ then
          if occ < due then redis.call('ZADD', KEYS[4], fmt('%d', occ), ARGV[1]) end
          px = math.max(occ, now + tonumber(ARGV[3])) + window - now
          redis.call('PEXPIRE', KEYS[1], fmt('%d', px))
          redis.call('PEXPIRE', KEYS[2], fmt('%d', px))
        else
          px = tonumber(ARGV[3]) + window
        end
      end
      if rec then redis.call('PEXPIRE', KEYS[3], fmt('%d', math.max(px, 2 * every))) end
      -- the request memo (lib.lua's remember)
      local devs = n - 1
      redis.call('ZADD', KEYS[5], nows, id, nows, id .. '=ok,' .. left .. ',' .. devs .. ',' .. members)
      redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', '(' .. fmt('%d', now - tonumber(ARGV[9])))
      redis.call('PEXPIRE', KEYS[5], ARGV[9])
      return 'ok ' .. left .. ' ' .. devs .. ' ' .. members
    end
  end
end
