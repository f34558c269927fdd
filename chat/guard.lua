-- guard.lua: the chat package's first library, put before every script.
-- It turns data this package did not write into corrupt(i, why) naming
-- KEYS[i], wherever in a script it is found, and the routing scripts'
-- stale roster into conflict('roster', admin IDs).
--
-- rc(i, cmd, ...) runs cmd on KEYS[i]; a WRONGTYPE reply (KEYS[i] holds
-- another type) ends the script with corrupt(i, ...). bad(i, why) ends it
-- with corrupt(i, why). A script's body runs inside guarded(f), which
-- turns those endings into replies. Scripts check every key's type before
-- their first write, so such an ending leaves nothing half written.

local CORRUPT, STALE = {}, {}

local function bad(i, why) error({CORRUPT, i, why}) end

local function rc(i, cmd, ...)
  local r = redis.pcall(cmd, KEYS[i], ...)
  if type(r) == 'table' and r.err then
    if string.find(r.err, 'WRONGTYPE', 1, true) then
      bad(i, 'holds another type than this package writes')
    end
    error(r, 0)
  end
  return r
end

-- stale ends a routing script whose roster is not the deployment's.
local function stale() error({STALE}) end

-- guarded runs f and returns its reply, corrupt(i, why) after bad, or
-- conflict('roster', the roster's admin IDs) after stale (KEYS[5] is the
-- roster in the scripts that call stale).
local function guarded(f)
  local okk, r = pcall(f)
  if okk then return r end
  if type(r) == 'table' then
    if r[1] == CORRUPT then return corrupt(r[2], r[3]) end
    if r[1] == STALE then
      if redis.call('HLEN', KEYS[5]) > MAX_ADMINS then
        return corrupt(5, 'more than ' .. MAX_ADMINS .. ' admins')
      end
      return conflict('roster', redis.call('HKEYS', KEYS[5]))
    end
  end
  error(r, 0)
end
