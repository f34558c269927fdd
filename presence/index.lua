-- index.lua: the presence package's library for the online index and the
-- events channel, put before lib.lua in every tracker script and before
-- sweep.lua. It reads ARGV[4..7] as lib.lua describes them, and SKEW_MS
-- (the constants tracker.go puts first).
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
-- (further from zero than now + TTL + SKEW_MS): data from elsewhere must
-- neither list a user forever nor keep the shard alive.
local function repair_index(key, now)
  local far = int_str(now + tonumber(ARGV[4]) + SKEW_MS + 1)
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
