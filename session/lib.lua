-- lib.lua: the session package's library, sent whole (call.Uses) after
-- the prelude and before every script that reads or writes a session, an
-- index, a request key or a user record; it runs nothing by itself. It
-- builds no key: the callers pass every key in KEYS (the session hash,
-- the user's index, a request key, a user record, and with events the
-- slot's events stream and sweep schedule). The KEYS and ARGV it reads
-- are those of events(k) and replayed/remember (below); it returns
-- nothing.

-- MAX_AHEAD_MS: the furthest past the server's now that a deadline this
-- package writes can lie: the longest lifetime a Store accepts
-- (maxLifetime, 365 days) plus one day for a clock that steps back in
-- a failover. An index score or an absolute_expiry beyond it is not ours.
-- MAX_LIFE_MS: that longest lifetime alone, the bound parseSession puts
-- on an idle_timeout and (plus a second) on absolute_expiry - created_at.
--
-- prune(idx, now[, check_only]): checks the entry that expires last
-- (recording its deadline, pruned_top), then drops the index entries
-- whose session has expired (score <= now), emitting "expired" for each
-- with events; returns nil, or why the index holds data this package did
-- not write (nothing is written then). With check_only it checks and
-- writes nothing (the caller calls expire_due(idx, now) once its own
-- checks pass). Every script that adds to an index or lists it calls it
-- first (Create prunes to the second, on its own); Get adds nothing, and
-- checks the index with outlived instead.
--
-- index_ttl(idx, now): makes the (pruned) index expire with its
-- longest-lived session (plus EV.grace with events), so it never outlives
-- the user's last session by more. An emptied index is deleted by Redis
-- itself.
--
-- EV, events(k) and emit(kind, sid, at, why): lifecycle events
-- (WithEvents). A script calls events(k) first, with k the position in
-- KEYS where the Go side puts the slot's events stream and due set when
-- the Store has events (KEYS[k], KEYS[k+1]; nothing there without); it
-- then takes the user ID, the stream's MAXLEN and the index grace (ms)
-- from the last three ARGV and returns the number of ARGV before them
-- (#ARGV without events). emit XADDs one event (kind created, revoked,
-- evicted or expired; at in Unix ms) and counts it in EV.n; without
-- events it does nothing. Every step that takes a session out of the
-- index emits its terminal event in the same script: so each is emitted
-- once, by the one run that removed the entry. expire_due(idx, upto)
-- removes the entries scored up to upto, emitting "expired" for each.
--
-- index_added(idx, at, now): index_ttl after this script, having pruned
-- the index, added or moved an entry to expire at at: when no entry
-- outlived at at the prune (pruned_top), at is the latest expiry and no
-- second read is needed.
--
-- live(key, idx, sid, now[, check]), with key = KEYS[1] and idx =
-- KEYS[2]: returns the absolute expiry (ms) of session sid when it is
-- live (listed in the index with a score above now, and its hash present
-- with an absolute_expiry above now); nil when it is not (its leftovers,
-- hash or index entry, are removed: an index entry removed so emits
-- "expired"); or nil and the corrupt reply to return when either key
-- holds data this package did not write. It reads and checks everything
-- (prune's check, the hash's absolute_expiry, the entry's score) before it
-- writes anything, then prunes the index. check, when given, is called
-- for a live session between the two, with the absolute expiry and the
-- hash's absolute_expiry, user_id, created_at and idle_timeout (an HMGET
-- row): a reply it returns (a corrupt hash, a refusal) is returned as
-- live's second result, and nothing is written then.
--
-- session_bad(want, abs, uid, at, own): for a live session of user want
-- with absolute expiry abs (ms) and the user_id, created_at and
-- idle_timeout fields uid, at and own (false when missing), why the Go
-- side (parseSession) would refuse the hash that a script returns after
-- sliding it: a user_id other than want; a
-- created_at that is not an RFC 3339 time in the strict form Go's
-- time.Parse tries first ("2026-01-16T10:00:00Z", with an optional
-- fraction of a second and Z or a numeric offset: what this package and
-- the seeds write), or more than the longest lifetime (plus a second)
-- before abs, or after it; an idle_timeout that is not a timeout this
-- package writes. nil when it would not. A script that slides a session
-- and returns its hash checks it so before its first write.
--
-- slide(key, idx, sid, now, idle, abs): moves a live session's idle
-- deadline to now + idle, capped at abs, on the hash (last_activity), its
-- TTL and its index score; returns the new deadline. A session with its
-- own idle timeout (the idle_timeout field, ms) slides by that instead;
-- a value that is not one (not this package's) is ignored here; the
-- scripts that return the hash for Go to parse reject it before they
-- write (session_bad).
--
-- refresh_state(key): a session's refresh_token_hash ('' when none) and
-- refresh_token_used as a list, oldest first; or nil, nil and the
-- corrupt reply when either is not what this package writes (a hex
-- SHA-256; at most 64 of them).
--
-- clock(): the server's time (one TIME) as whole Unix milliseconds, and
-- its whole seconds as TIME spells them (a decimal string).
--
-- outlived(idx, at, now): nil when no entry of the index expires at or
-- after at (a decimal string of Unix ms; one ZCOUNT), so that a session
-- moved to at is the longest-lived and at is the index's TTL; else the
-- latest deadline in the index, or nil and why it is not a deadline this
-- package writes (the index holds data this package did not write).
local MAX_AHEAD_MS = 366 * 86400000

local EV = {grace = 0, n = 0}

local function events(k)
  local n = #ARGV
  if KEYS[k] then
    EV.key, EV.due, EV.user, EV.max, EV.grace = KEYS[k], KEYS[k + 1], ARGV[n - 2], ARGV[n - 1], tonumber(ARGV[n])
    return n - 3
  end
  return n
end

local function emit(kind, sid, at, why)
  if EV.key then
    redis.call('XADD', EV.key, 'MAXLEN', '~', EV.max, '*', 'kind', kind, 'user_id', EV.user,
      'session_id', sid, 'at', at, 'reason', why)
    EV.n = EV.n + 1
  end
end

local function expire_due(idx, upto)
  if EV.key then
    local gone = redis.call('ZRANGEBYSCORE', idx, '-inf', upto, 'WITHSCORES')
    for i = 1, #gone, 2 do emit('expired', gone[i], score_digits(gone[i + 1]), '') end
  end
  redis.call('ZREMRANGEBYSCORE', idx, '-inf', upto)
end

local MAX_LIFE_MS = 365 * 86400000

local pruned_top = nil

local function prune(idx, now, check_only)
  pruned_top = nil
  local last = redis.call('ZRANGE', idx, '-1', '-1', 'WITHSCORES')
  -- checked before the prune: the entry that expires last is the one the
  -- prune keeps when it keeps any; when it is due (score <= now, -inf
  -- too), the prune empties the index
  if #last == 2 and not (tonumber(last[2]) and tonumber(last[2]) <= now) then
    pruned_top = score_ms(last[2], now + 1, now + MAX_AHEAD_MS)
    if not pruned_top then
      return 'an entry expires at ' .. last[2] .. ', not a deadline this package writes'
    end
  end
  if not check_only then expire_due(idx, now) end
  return nil
end

local function index_ttl(idx, now)
  local last = redis.call('ZRANGE', idx, '-1', '-1', 'WITHSCORES')
  if #last == 2 then
    expire_at(idx, tonumber(last[2]) + EV.grace, now)
  end
end

local function index_added(idx, at, now)
  if pruned_top and at < pruned_top then
    index_ttl(idx, now)
  else
    expire_at(idx, at + EV.grace, now)
  end
end

local function live(key, idx, sid, now, check)
  -- every read and check first: a call that fails writes nothing
  local bad = prune(idx, now, true)
  if bad then return nil, {'corrupt', 2, bad} end
  local v = redis.call('HMGET', key, 'absolute_expiry', 'user_id', 'created_at', 'idle_timeout')
  local abs, n = v[1], nil
  if abs then
    n = to_int(abs)
    if not n or n > now + MAX_AHEAD_MS then
      return nil, {'corrupt', 1, 'absolute_expiry ' .. abs .. ' is not a deadline this package writes'}
    end
  elseif redis.call('EXISTS', key) == 1 then
    return nil, {'corrupt', 1, 'no absolute_expiry'}
  end
  local score = tonumber(redis.call('ZSCORE', idx, sid))
  local listed = score and score > now
  if listed and n and n > now then
    if check then
      local fail = check(n, v)
      if fail then return nil, fail end
    end
    expire_due(idx, now)
    return n
  end
  -- then the writes: the prune (which drops this session's own entry
  -- when it is due), and the leftovers of a session that is not live
  expire_due(idx, now)
  if listed then emit('expired', sid, int_str(now), '') end
  redis.call('DEL', key)
  if listed then
    redis.call('ZREM', idx, sid)
    index_ttl(idx, now)
  end
  return nil
end

local function session_bad(want, abs, uid, at, own)
  if uid ~= want then return 'user_id is not ' .. want end
  -- created_at as Go's time.Parse(time.RFC3339) reads it first (its
  -- strict form, which this package and the seeds write): a date, a time,
  -- an optional fraction of a second, Z or a numeric offset; c is it in
  -- Unix ms (days from the civil date: rfc3339's algorithm run backwards)
  local c
  local y, mo, d, h, mi, sec, rest = string.match(at or '', '^(%d%d%d%d)%-(%d%d)%-(%d%d)T(%d%d):(%d%d):(%d%d)(.*)$')
  if y then
    y, mo, d, h, mi, sec = tonumber(y), tonumber(mo), tonumber(d), tonumber(h), tonumber(mi), tonumber(sec)
    local leap = y % 4 == 0 and (y % 100 ~= 0 or y % 400 == 0)
    if mo >= 1 and mo <= 12 and d >= 1 and h <= 23 and mi <= 59 and sec <= 59 and
      (d <= 28 or d <= ({31, leap and 29 or 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31})[mo]) then
      local frac = string.match(rest, '^%.(%d+)')
      if frac then rest = string.sub(rest, #frac + 2) end
      local off = rest == 'Z' and 0
      local sign, oh, om = string.match(rest, '^([+-])(%d%d):(%d%d)$')
      if sign and tonumber(oh) <= 23 and tonumber(om) <= 59 then
        off = (tonumber(oh) * 60 + tonumber(om)) * 60
        if sign == '-' then off = -off end
      end
      if off then
        if mo <= 2 then y = y - 1 end
        local era = (y - y % 400) / 400
        local yoe = y - era * 400
        local mp = (mo + 9) % 12
        local doe = yoe * 365 + (yoe - yoe % 4) / 4 - (yoe - yoe % 100) / 100 + (153 * mp + 2 - (153 * mp + 2) % 5) / 5 + d - 1
        c = ((era * 146097 + doe - 719468) * 86400 + h * 3600 + mi * 60 + sec - off) * 1000
        if frac then c = c + tonumber('0.' .. frac) * 1000 end
      end
    end
  end
  if not c then return 'created_at ' .. (at or '(missing)') .. ' is not an RFC 3339 time' end
  -- parseSession's bound: absolute_expiry no earlier than created_at and
  -- at most the longest lifetime (and a second) after it
  if abs < c or abs - c > MAX_LIFE_MS + 1000 then
    return 'absolute_expiry ' .. int_str(abs) .. ' is not within the longest lifetime after created_at ' .. at
  end
  if own and not to_int(own, 1, MAX_LIFE_MS) then
    return 'idle_timeout ' .. own .. ' is not a timeout this package writes'
  end
  return nil
end

local function slide(key, idx, sid, now, idle, abs)
  local own = redis.call('HGET', key, 'idle_timeout')
  if own then idle = to_int(own, 1, MAX_AHEAD_MS) or idle end
  local exp = now + idle
  if exp > abs then exp = abs end
  redis.call('HSET', key, 'last_activity', rfc3339(now))
  expire_at(key, exp, now)
  redis.call('ZADD', idx, int_str(exp), sid)
  index_added(idx, exp, now)
  return exp
end

local function refresh_state(key)
  local h = redis.call('HMGET', key, 'refresh_token_hash', 'refresh_token_used')
  local cur = h[1] or ''
  if cur ~= '' and (#cur ~= 64 or string.find(cur, '[^0-9a-f]')) then
    return nil, nil, {'corrupt', 1, 'refresh_token_hash is not a hex SHA-256'}
  end
  local list = {}
  for w in string.gmatch(h[2] or '', '%S+') do
    if #w ~= 64 or string.find(w, '[^0-9a-f]') or #list >= 64 then
      return nil, nil, {'corrupt', 1, 'refresh_token_used is not a list of at most 64 hex SHA-256'}
    end
    list[#list + 1] = w
  end
  return cur, list
end

local function clock()
  local t = redis.call('TIME')
  local s, us = tonumber(t[1]), tonumber(t[2])
  return s * 1000 + (us - us % 1000) / 1000, t[1]
end

local function outlived(idx, at, now)
  if redis.call('ZCOUNT', idx, at, '+inf') == 0 then return nil end
  local last = redis.call('ZRANGE', idx, '-1', '-1', 'WITHSCORES')
  local top = score_ms(last[2], now + 1, now + MAX_AHEAD_MS)
  if not top then
    return nil, 'an entry expires at ' .. tostring(last[2]) .. ', not a deadline this package writes'
  end
  return top
end

-- replayed(i, hi), for requests that go-redis may send twice (a reply
-- lost after the server ran the script), each carrying a random request
-- ID whose request key session:request:{user_id}:{request_id} the caller
-- passes as KEYS[i]: the outcome (an integer in [0, hi]) that an earlier
-- run of this same request recorded at KEYS[i]; nil when there is none,
-- false when KEYS[i] holds something this package did not write.
--
-- remember(i, n, window): records outcome n at KEYS[i] for window ms.
local function replayed(i, hi)
  local v = redis.call('GET', KEYS[i])
  if not v then return nil end
  return to_int(v, 0, hi) or false
end

local function remember(i, n, window)
  redis.call('SET', KEYS[i], int_str(n), 'PX', window)
end

-- user_state(key) reads a user record's status and the home-automation
-- backend's active flag and combines them (docs/session.md, "The active
-- flag"): 'blocked' when either says so (status blocked, or active
-- 'false'); else the status; else 'login' for active 'true' alone. It
-- returns the state, the status field and the active field; 'missing' when
-- there is no record; false and why for a status other than login,
-- anonymous or blocked, an active other than 'true' or 'false', or a
-- record with neither.
local function user_state(key)
  local r = redis.call('HMGET', key, 'status', 'active')
  local st, active = r[1], r[2]
  if active and active ~= 'true' and active ~= 'false' then
    return false, "active is not 'true' or 'false'"
  end
  if st and st ~= 'login' and st ~= 'anonymous' and st ~= 'blocked' then
    return false, 'status is not login, anonymous or blocked'
  end
  if not st and not active then
    if redis.call('EXISTS', key) == 1 then return false, 'no status or active field' end
    return 'missing'
  end
  if active == 'false' then return 'blocked', st, active end
  return st or 'login', st, active
end

-- user_touch(key, ttl, now[, st]) records a request on a user record
-- (user:{user_id}): last_seen = now (Unix ms), TTL = ttl ms. It returns
-- 'missing' when there is no record; false and why (nothing written) when
-- the record is not one this package reads (user_state's cases, a
-- login_time or last_seen that is not Unix ms of the years 1970 to
-- 9999); else the record's
-- field/value list and its state (user_state). With ttl nil it only reads
-- and checks, writing nothing, and returns the state in place of the
-- list; a later call given that state as st skips the reads and writes.
local function user_touch(key, ttl, now, st)
  if not st then
    local why
    st, why = user_state(key)
    if st == 'missing' or st == false then return st, why end
    local r = redis.call('HMGET', key, 'login_time', 'last_seen')
    for i, f in ipairs({'login_time', 'last_seen'}) do
      -- Unix ms of the years 1970 to 9999, as parseUser reads it
      if r[i] and not to_int(r[i], 0, 253402300799999) then
        return false, f .. ' is not Unix ms of the years 1970 to 9999'
      end
    end
    if not ttl then return st end
  end
  redis.call('HSET', key, 'last_seen', int_str(now))
  redis.call('PEXPIRE', key, ttl)
  return redis.call('HGETALL', key), st
end
