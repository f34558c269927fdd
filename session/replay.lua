-- replay.lua: the session package's library for requests that go-redis
-- may send twice (a reply lost after the server ran the script), put
-- before revoke.lua, revoke_all.lua, user_login.lua and user_unblock.lua
-- (not run alone). Each such request carries a random request ID, and
-- KEYS[i] is its request key session:request:{user_id}:{request_id}.
--
-- replayed(i, hi): the outcome (an integer in [0, hi]) that an earlier run
-- of this same request recorded at KEYS[i]; nil when there is none, false
-- when KEYS[i] holds something this package did not write.
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
