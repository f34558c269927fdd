-- replay.lua: the presence package's record of first outcomes, put before
-- the scripts whose outcome depends on the state they find (connect,
-- disconnect, update, heartbeat, sweep, typing_start, typing_stop).
--
-- go-redis resends a command whose reply was lost after the server ran it,
-- and a whole pipeline after a cut connection, so one request can run
-- twice. The caller draws a request ID (16 hex digits) before the first
-- send; the first run records its reply under it, and a second run of the
-- same request finds that reply and returns it without acting again.
--
-- A record key holds the replies of the last REPLAY_KEEP requests on its
-- entity, newest first, as "<request ID>=<field>,<field>,...;" (fields are
-- status words and decimal integers), and expires REPLAY_MS after the last
-- one (REPLAY_MS: the constants tracker.go puts first). A request replayed
-- later than that, or after REPLAY_KEEP newer requests on the same entity,
-- runs again.

local REPLAY_KEEP = 8

-- REPLAY_CORRUPT is the reason given for a record this package did not
-- write.
local REPLAY_CORRUPT = 'replay record is not "<16 hex digits>=<fields>;" entries'

-- replayed returns the reply recorded at key for request id (nil when
-- there is none or id is ''; false when key holds anything this package
-- did not write) and the record's value, for remember.
local function replayed(key, id)
  if id == '' then return nil end
  local v = redis.call('GET', key)
  if not v then return nil end
  if v == '' then return false end
  local pos, n, hit = 1, 0, nil
  while pos <= #v do
    local rid, body, nxt = string.match(v, '^(%x+)=([%w,%-]*);()', pos)
    n = n + 1
    if not rid or #rid ~= 16 or n > REPLAY_KEEP then return false end
    if not hit and rid == id then hit = body end
    pos = nxt
  end
  if not hit then return nil, v end
  local rep = {}
  for f in string.gmatch(hit, '[^,]+') do rep[#rep + 1] = f end
  return rep, v
end

-- remember records rep (a reply whose elements are words and integers) as
-- request id's at key, keeping the newest REPLAY_KEEP entries of old (the
-- value replayed returned), and returns rep.
local function remember(key, id, rep, old)
  if id == '' then return rep end
  local parts = {}
  for i = 1, #rep do
    local x = rep[i]
    if type(x) == 'number' then x = int_str(x) end
    parts[i] = x
  end
  local rec = id .. '=' .. table.concat(parts, ',') .. ';'
  if old then
    local pos = 1
    for _ = 1, REPLAY_KEEP - 1 do
      local e = string.find(old, ';', pos, true)
      if not e then break end
      pos = e + 1
    end
    rec = rec .. string.sub(old, 1, pos - 1)
  end
  redis.call('SET', key, rec, 'PX', REPLAY_MS)
  return rep
end
