-- get_fast.lua: Get's common case, put before everything else of
-- get.lua's script (call.Head): no closure of the prelude or of live.lua
-- is made when it returns. It uses no helper; what it does not recognise
-- as its case falls through, before any write, to get.lua, which does
-- the whole call again from the start.
--
-- KEYS and ARGV as get.lua takes them, and:
-- ARGV[3] Unix seconds as a decimal string, ARGV[4] those seconds as the
--         seed's timestamps ("2026-01-16T10:00:00Z"): the caller's
--         guess of the server's second, taken when TIME says that second
--         (else get.lua computes the stamp)
--
-- The case: the session live (as get.lua tests it), its idle_timeout, if
-- any, a timeout this package writes, the index's last entry before the
-- new deadline or a deadline this package writes, and the server's second
-- the one ARGV[3] names. It then does what get.lua does (the same
-- commands, replies and TTLs) with live.lua's helpers written out: int_str
-- as '%d' (the same digits for the whole numbers below 2^53 it formats),
-- to_int as a pattern and tonumber, stamp taken from ARGV[4].
local t = redis.call('TIME')
if t[1] == ARGV[3] then
  local key, idx, sid = KEYS[1], KEYS[2], ARGV[1]
  local us = tonumber(t[2])
  local now = tonumber(t[1]) * 1000 + (us - us % 1000) / 1000
  local max = now + 31622400000 -- live.lua's MAX_AHEAD_MS
  local score = redis.call('ZSCORE', idx, sid)
  local v = redis.call('HMGET', key, 'user_id', 'email', 'created_at', 'last_activity', 'ip_address',
    'user_agent', 'device_fingerprint', 'absolute_expiry', 'refresh_token_hash', 'refresh_token_used',
    'idle_timeout')
  local match, fmt = string.match, string.format
  local abs, idle = v[8], ARGV[2]
  local n = score and abs and #abs <= 17 and match(abs, '^%d+$') and tonumber(abs)
  if v[11] then
    local own = #v[11] <= 17 and match(v[11], '^%d+$') and tonumber(v[11])
    if own and own >= 1 and own <= 31622400000 then idle = v[11] else n = nil end
  end
  if n and n > now and n <= max and tonumber(score) > now then
    local exp, ttl = now + tonumber(idle), idle
    if exp > n then
      exp = n
      ttl = fmt('%d', n - now)
    end
    local at = fmt('%d', exp)
    local top
    if redis.call('ZCOUNT', idx, at, '+inf') > 0 then
      local last = redis.call('ZRANGE', idx, '-1', '-1', 'WITHSCORES')
      local s = last[2]
      top = s and #s <= 17 and match(s, '^%d+$') and tonumber(s)
      if not (top and top > now and top <= max) then top = false end
    end
    if top ~= false then
      local grace = KEYS[3] and tonumber(ARGV[#ARGV]) or 0
      local held = 0
      for i = 1, 11 do
        if v[i] then held = held + 1 end
      end
      local ts = ARGV[4]
      if v[4] ~= ts then
        redis.call('HSET', key, 'last_activity', ts)
      end
      redis.call('PEXPIRE', key, ttl)
      redis.call('ZADD', idx, at, sid)
      if top then
        redis.call('PEXPIRE', idx, fmt('%d', top + grace - now))
      elseif KEYS[3] then
        redis.call('PEXPIRE', idx, fmt('%d', exp + grace - now))
      else
        redis.call('PEXPIRE', idx, ttl)
      end
      if redis.call('HLEN', key) == held + (v[4] and 0 or 1) then
        return {'ok', now, exp, 'fields', v[1], v[2], v[3], ts, v[5], v[6], v[7], abs, v[11]}
      end
      return {'ok', now, exp, redis.call('HGETALL', key), 'pairs'}
    end
  end
end
