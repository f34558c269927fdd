-- user_touch.lua: the user-record library of the session package, put
-- before user_validate.lua and authenticate.lua (not run alone).
--
-- user_touch(key, ttl, now) records a request on a user record
-- (user:{user_id}): last_seen = now (Unix ms), TTL = ttl ms. It returns
-- 'missing' when there is no record; false and why (nothing written) when
-- the record is not one this package writes (a status other than login,
-- anonymous or blocked, a login_time or last_seen that is not Unix ms);
-- else the record's field/value list and its status.
local function user_touch(key, ttl, now)
  local r = redis.call('HMGET', key, 'status', 'login_time', 'last_seen')
  local st = r[1]
  if not st then
    if redis.call('EXISTS', key) == 1 then return false, 'no status field' end
    return 'missing'
  end
  if st ~= 'login' and st ~= 'anonymous' and st ~= 'blocked' then
    return false, 'status is not login, anonymous or blocked'
  end
  for i, f in ipairs({'login_time', 'last_seen'}) do
    if r[i + 1] and not to_int(r[i + 1], 0) then
      return false, f .. ' is not Unix ms'
    end
  end
  redis.call('HSET', key, 'last_seen', int_str(now))
  redis.call('PEXPIRE', key, ttl)
  return redis.call('HGETALL', key), st
end
