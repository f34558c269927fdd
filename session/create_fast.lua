-- create_fast.lua: Create's common case, put before everything else of
-- create.lua's script (call.Head): no closure of the prelude or of
-- live.lua is made when it returns. It uses no helper; what it does not
-- recognise as its case falls through to create.lua, which does the
-- whole call again from the start, before any write but the index's
-- prune (which create.lua does first too, and a second time changes
-- nothing).
--
-- KEYS and ARGV as create.lua takes them, the last two ARGV before the
-- events' the caller's second and its stamp (see get_fast.lua).
--
-- The case: no events (two KEYS), no limit on sessions (ARGV[4] is "0"),
-- neither extra fields nor a timeout of the session's own (12 ARGV), the
-- server's second the one the caller named, the index's last entry
-- before the new deadline or a deadline this package writes (live.lua's
-- outlived), and no hash at KEYS[1] (a resent request finds its own). It then does what create.lua does in
-- that case, with the same commands, replies and TTLs.
if not KEYS[3] and #ARGV == 12 and ARGV[4] == '0' then
  local t = redis.call('TIME')
  if t[1] == ARGV[11] then
    local key, idx, idle = KEYS[1], KEYS[2], ARGV[2]
    local us = tonumber(t[2])
    local now = tonumber(t[1]) * 1000 + (us - us % 1000) / 1000
    local abs = now + tonumber(ARGV[3])
    local exp, ttl = now + tonumber(idle), idle
    if exp > abs then
      exp = abs
      ttl = ARGV[3]
    end
    local fmt = string.format
    local at = fmt('%d', exp)
    redis.call('ZREMRANGEBYSCORE', idx, '-inf', t[1] .. '000')
    local top
    if redis.call('ZCOUNT', idx, at, '+inf') > 0 then
      local last = redis.call('ZRANGE', idx, '-1', '-1', 'WITHSCORES')
      local s = last[2]
      top = s and #s <= 17 and string.match(s, '^%d+$') and tonumber(s)
      if not (top and top > now and top <= now + 31622400000) then top = false end
    end
    if top ~= false and redis.call('EXISTS', key) == 0 then
      local ts = ARGV[12]
      redis.call('HSET', key, 'user_id', ARGV[6], 'email', ARGV[7], 'ip_address', ARGV[8],
        'user_agent', ARGV[9], 'device_fingerprint', ARGV[10], 'created_at', ts, 'last_activity', ts,
        'absolute_expiry', fmt('%d', abs), 'refresh_token_hash', ARGV[5])
      redis.call('PEXPIRE', key, ttl)
      redis.call('ZADD', idx, at, ARGV[1])
      if top then
        redis.call('PEXPIRE', idx, fmt('%d', top - now))
      else
        redis.call('PEXPIRE', idx, ttl)
      end
      return fmt('ok %d %d %d 0', now, exp, abs) -- ok(now, exp, abs, 0) as words: no table to build
    end
  end
end
