-- fence: the prelude that acquire.lua, fair_acquire.lua and
-- interval_claim.lua are appended to (script.New joins them), so the
-- fencing-token rule is written once.
--
-- issue_fence(fence_key, nowus, ttl_ms) returns the next token for the
-- resource: max(last + 1, server TIME in µs), stored back with the fence
-- key's TTL, so tokens keep increasing after the key expires or is deleted
-- as long as server time moves forward. It returns nil, writing nothing,
-- when the key holds anything but a decimal below 2^53 - 1 (above it,
-- last + 1 is not exact in Lua's doubles); the caller reports corruption.
local function issue_fence(fence_key, nowus, ttl_ms)
  local tok = nowus
  local last = redis.call('GET', fence_key)
  if last then
    if #last > 16 or not string.match(last, '^%d+$') then
      return nil
    end
    last = tonumber(last)
    if last >= 9007199254740991 then
      return nil
    end
    if last + 1 > tok then
      tok = last + 1
    end
  end
  redis.call('SET', fence_key, string.format('%.0f', tok), 'PX', ttl_ms)
  return tok
end
