-- expire_at.lua: a deadline set as a relative TTL. Sent before the
-- scripts whose operation names call.ExpireAt.

-- expire_at makes key expire at the deadline at (Unix ms) with a relative
-- PEXPIRE of at - now rounded up (at least 1 ms), never PEXPIREAT: on
-- Redis 7.0, PEXPIREAT inside a script compares with the live clock while
-- lookups use the script's start time, so a deadline that passes while the
-- script runs would delete the key under the script's feet.
local function expire_at(key, at, now)
  local ttl = math.ceil(at - now)
  if ttl < 1 then ttl = 1 end
  redis.call('PEXPIRE', key, int_str(ttl))
end
