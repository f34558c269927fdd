-- create.lua: write a new session hash and list it in the user's index
-- (uses lib.lua).
--
-- KEYS[1] session hash   session:user:{user_id}:{session_id}
-- KEYS[2] user index     session:index:{user_id}
-- ARGV[1] session ID (the digest of a secret this request drew)
-- ARGV[2] idle timeout, ms (> 0, a decimal integer): the session's own
--         or the Store's
-- ARGV[3] absolute lifetime, ms (>= idle): the session's own or the
--         Store's
-- ARGV[4] max sessions per user (0 = unlimited)
-- ARGV[5] hex SHA-256 of the first refresh token
-- ARGV[6..10] user_id, email, ip_address, user_agent, device_fingerprint
-- ARGV[11..] field, value pairs of the caller's extra fields, and
--           idle_timeout with ARGV[2] for a session with its own;
--           created_at, last_activity, absolute_expiry and
--           refresh_token_hash are written here.
-- KEYS[3] events stream   session:events:{slot}, with events only
-- KEYS[4] sweep schedule  session:due:{slot}, with events only
-- ARGV[#ARGV-2 .. #ARGV], with events only: user ID, events stream
--         length, index grace (ms) (lib.lua's events):
--         "created" is emitted for the new session, "evicted"
--         for each one evicted, "expired" for each entry pruned; the user
--         is due for a sweep (KEYS[4]) no later than the new session's
--         expiry.
--
-- Returns {'ok', created_ms, expiry_ms, absolute_expiry_ms, evicted}. The ID
-- is the digest of 256 random bits, so a hash already at KEYS[1] is this
-- same request sent again (go-redis resends a command whose reply was
-- lost, and a whole pipeline after a broken connection): it reports what
-- the first run did and writes nothing; {'corrupt', i, why} when KEYS[i] holds
-- anything else, or the index data this package did not write (nothing
-- is written then).
--
-- Everything is read and checked before the first write: the index
-- (outlived), the hash, and with events the sweep schedule (one ZSCORE,
-- which also tells whether the user is due no later already, and then
-- saves the ZADD); with events the first write is then an XADD to the
-- stream, which fails the call on a stream this package did not write
-- before anything else is written. The index is then pruned up to the
-- current second (entries that expired in the last second wait for the
-- next script that prunes); one ZCOUNT tells whether the new session is
-- the user's longest-lived (the index TTL is then its own) and whether
-- the index holds deadlines this package never writes.
local key, idx = KEYS[1], KEYS[2]
local sid, idle, rth = ARGV[1], ARGV[2], ARGV[5]
local life, max = tonumber(ARGV[3]), tonumber(ARGV[4])
local nargs = events(3)
local now, secs = clock()
local abs = now + life
local exp = now + tonumber(idle)
local ttl = idle
if exp > abs then
  exp = abs
  ttl = ARGV[3]
end
local at = int_str(exp)
-- outlived counts the entries from at (after now) on: the prune below
-- drops none of them, so it checks what the prune leaves
local top, bad = outlived(idx, at, now)
if bad then return {'corrupt', 2, bad} end
if redis.call('EXISTS', key) == 1 then
  local h = redis.call('HMGET', key, 'refresh_token_hash', 'absolute_expiry')
  local first = to_int(h[2])
  if h[1] ~= rth or not first then
    return {'corrupt', 1, 'a new session ID is taken by a hash this request did not write'}
  end
  local created = first - life
  local e = tonumber(redis.call('ZSCORE', idx, sid)) or math.min(created + tonumber(idle), first)
  return {'ok', created, e, first, 0}
end
-- with events: the schedule's type, read before the first write (a
-- string there fails the ZSCORE, with nothing written)
local due = EV.key and redis.call('ZSCORE', EV.due, EV.user)
expire_due(idx, secs .. '000')
if EV.key then
  emit('created', sid, int_str(now), 'create')
  if not due or tonumber(due) > exp then
    redis.call('ZADD', EV.due, 'LT', at, EV.user)
  end
  if redis.call('PTTL', EV.due) < abs - now + EV.grace then
    expire_at(EV.due, abs + EV.grace, now)
  end
end
local ts = rfc3339(now)
if nargs == 10 then
  redis.call('HSET', key, 'user_id', ARGV[6], 'email', ARGV[7], 'ip_address', ARGV[8],
    'user_agent', ARGV[9], 'device_fingerprint', ARGV[10], 'created_at', ts, 'last_activity', ts,
    'absolute_expiry', int_str(abs), 'refresh_token_hash', rth)
else
  batched('HSET', key, ARGV, 11, nargs, {'user_id', ARGV[6], 'email', ARGV[7], 'ip_address', ARGV[8],
    'user_agent', ARGV[9], 'device_fingerprint', ARGV[10], 'created_at', ts, 'last_activity', ts,
    'absolute_expiry', int_str(abs), 'refresh_token_hash', rth})
end
redis.call('PEXPIRE', key, ttl)
redis.call('ZADD', idx, at, sid)
local evicted = 0
if max > 0 then
  local extra = redis.call('ZCARD', idx) - max
  if extra > 0 then
    -- Evict the sessions that would expire first (least recently active),
    -- never the one just created. Their hashes are unreachable from now on
    -- and removed by the next operation that names them or by their TTL.
    local oldest = redis.call('ZRANGE', idx, '0', extra)
    for _, id in ipairs(oldest) do
      if evicted < extra and id ~= sid then
        emit('evicted', id, int_str(now), 'max sessions')
        redis.call('ZREM', idx, id)
        evicted = evicted + 1
      end
    end
  end
end
if evicted > 0 and top then
  -- the longest-lived entry may be gone: the TTL follows what is left
  index_ttl(idx, now)
elseif top then
  expire_at(idx, top + EV.grace, now)
elseif EV.key then
  expire_at(idx, exp + EV.grace, now)
else
  redis.call('PEXPIRE', idx, ttl)
end
return {'ok', now, exp, abs, evicted}
