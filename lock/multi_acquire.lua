-- multi acquire: take the leases of several resources whose keys share one
-- slot, all or none, and issue each its fencing token (with lib.lua's
-- issue_fence, sent before it).
-- KEYS[2i-1] lock key       lock:{resource_type}:{resource_id}, i = 1..n
-- KEYS[2i]   fence key      lock:fence:{resource_type}:{resource_id}
-- ARGV[1] owner ID (no ':'), new for each AcquireMulti or TryAcquireMulti call
-- ARGV[2] lease, ms
-- ARGV[3] fence key keep, ms (see lib.lua)
-- Returns {'ok', token 1, ..., token n} when every lease is the caller's,
-- {'conflict', i, remaining lease ms} when resource i is held by someone else
-- (nothing written), {'corrupt', k, why} as acquire.lua does for KEYS[k].
-- A resource already held by this owner ID (a replay of this call) keeps
-- its lease and reports the token it was given; the others are taken.
local n = #KEYS / 2
local mine = {}
for i = 1, n do
  local v = redis.call('GET', KEYS[2 * i - 1])
  if v then
    if string.sub(v, 1, #ARGV[1] + 1) ~= ARGV[1] .. ':' then
      local pttl = redis.call('PTTL', KEYS[2 * i - 1])
      if pttl < 0 then
        return {'corrupt', 2 * i - 1, 'lease lock without a TTL'}
      end
      return {'conflict', i, pttl}
    end
    local tok = redis.call('GET', KEYS[2 * i])
    tok = tok and #tok <= 16 and string.find(tok, '^%d+$') and tonumber(tok)
    if not tok or tok < 1 or tok > 9007199254740991 then
      return {'corrupt', 2 * i, FENCE_CORRUPT}
    end
    mine[i] = tok
  else
    -- Checked before anything is written, so that a corrupt fence
    -- leaves every resource as it was.
    local last = redis.call('GET', KEYS[2 * i])
    local ok_last = not last or (#last <= 16 and string.find(last, '^%d+$') and tonumber(last) <= 9007199254740990)
    if not ok_last then
      return {'corrupt', 2 * i, FENCE_CORRUPT}
    end
  end
end
local t = redis.call('TIME')
local out = {'ok'}
for i = 1, n do
  local tok = mine[i]
  if not tok then
    local us
    tok, us = issue_fence(KEYS[2 * i], t, ARGV[3]) -- checked above: never nil
    redis.call('SET', KEYS[2 * i - 1], ARGV[1] .. ':' .. t[1] .. string.sub(us, 1, 3) .. ':' .. ARGV[2], 'PX', ARGV[2])
  end
  out[i + 1] = tok
end
return out
