-- route.lua: the routing library (after guard.lua, stats.lua and
-- lib.lua, whose KEYS, ARGV and state it uses), put before the scripts
-- that check the roster and hand conversations out: open, move, unassign,
-- resolve, reconcile, add_admin, remove_admin and admins.

-- survey checks that the roster is the caller's (else the script ends
-- with conflict('roster', ...)) and reads each admin's capacity,
-- availability (an expired key is offline) and load.
local function survey()
  if rc(5, 'HLEN') ~= N then stale() end
  local caps = N > 0 and redis.call('HMGET', KEYS[5], unpack(admins)) or {}
  for i = 1, N do
    local c = caps[i]
    if not c then stale() end
    cap[i] = to_int(c, 1, MAX_CAPACITY)
    if not cap[i] then bad(5, 'a capacity is not an integer in [1, ' .. MAX_CAPACITY .. ']') end
    local k = kq(i, 1)
    local v = rc(k, 'GET')
    if v then
      if v ~= 'online' and v ~= 'away' and v ~= 'busy' and v ~= 'offline' then
        bad(k, 'not online, away, busy or offline')
      end
      local left = redis.call('PTTL', KEYS[k])
      if left < 0 or left > AVAIL_MS then
        bad(k, 'no TTL, or a longer one than availability is kept')
      end
    end
    avail[i] = v or 'offline'
    load[i] = rc(kq(i, 2), 'SCARD')
    if load[i] > MAX_CAPACITY then bad(kq(i, 2), 'more members than any capacity') end
  end
  local l = rc(6, 'HGET', 'last')
  if l then last = index[l] end
  surveyed = true
end

-- give assigns conv (state st, admin '') to admin i, taking it out of
-- the backlog unless unqueued (it is not there).
local function give(conv, st, i, reason, prev, unqueued)
  local k = kq(i, 2)
  rc(k, 'SADD', conv)
  redis.call('PEXPIRE', KEYS[k], TTL)
  if not unqueued then rc(4, 'ZREM', conv) end
  st.a = admins[i]
  put_state(conv, st)
  load[i] = load[i] + 1
  dirty[i] = true
  last, last_changed = i, true
  event(CH_ASSIGNED, 'assigned', conv, admins[i], prev, reason)
end

-- enqueue puts conv (state st, admin '') in the backlog at its arrival.
local function enqueue(conv, st, prev, reason)
  rc(4, 'ZADD', score(st.b, st.s), conv)
  put_state(conv, st)
  event(CH_ASSIGNED, 'assigned', conv, '', prev, reason)
end

-- prune drops up to PRUNE conversations whose last activity is TTL old.
local function prune()
  local old = rc(2, 'ZRANGEBYSCORE', '-inf', int_str(now - TTL), 'LIMIT', 0, PRUNE)
  for _, conv in ipairs(old) do
    live(conv)
  end
end

-- requeue moves every conversation of admin i back to the backlog.
local function requeue(i, reason)
  local k = kq(i, 2)
  for _, conv in ipairs(rc(k, 'SMEMBERS')) do
    local st = get_state(conv)
    if st and st.a == admins[i] then
      st.a = ''
      enqueue(conv, st, admins[i], reason)
      requeued_n = requeued_n + 1
    end
  end
  redis.call('DEL', KEYS[k])
  load[i] = 0
  dirty[i] = true
end

-- requeue_offline requeues the conversations of every admin whose
-- availability is offline or expired.
local function requeue_offline()
  for i = 1, N do
    if avail[i] == 'offline' and load[i] > 0 then requeue(i, 'offline') end
  end
end

-- pick returns the admin the next conversation goes to (never skip), or
-- nil when no online admin has room.
local function pick(skip)
  local best = nil
  local start = last or 0
  for k = 1, N do
    local i = (start + k - 1) % N + 1
    if i ~= skip and avail[i] == 'online' and load[i] < cap[i] then
      if STRATEGY == 'rr' then return i end
      if not best or load[i] < load[best] then best = i end
    end
  end
  return best
end

-- drain hands the backlog out, most urgent and oldest first, while an
-- online admin has room, at most DRAIN conversations per run; conv
-- skip_conv does not go to admin skip_admin (an Unassign's own).
local function drain(skip_conv, skip_admin)
  local pos, steps = 0, 0
  while assigned_n < DRAIN and steps < 2 * DRAIN and pick(nil) do
    steps = steps + 1
    local conv = rc(4, 'ZREVRANGE', pos, pos)[1]
    if not conv then return end
    local st = live(conv)
    if not st or st.a ~= '' then
      rc(4, 'ZREM', conv) -- gone, or assigned: the state wins
    else
      local i = pick(conv == skip_conv and skip_admin or nil)
      if i then
        give(conv, st, i, 'backlog', '')
        assigned_n = assigned_n + 1
      elseif conv == skip_conv then
        pos = pos + 1
      else
        return
      end
    end
  end
end

-- begin and close frame the scripts that route: check the roster, drop
-- expired conversations, requeue offline admins' ones; then drain the
-- backlog and finish.
-- (survey reads the cursor and prune the active set before any write:
-- their type checks).
local function begin()
  typed(1, 3, 4)
  survey()
  prune()
  requeue_offline()
end

local function close(skip_conv, skip_admin)
  drain(skip_conv, skip_admin)
  finish()
end
