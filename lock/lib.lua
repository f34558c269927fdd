-- lib.lua: the lock package's library, sent whole after the prelude and
-- before each script that issues a fencing token (call.Uses):
-- acquire.lua, fair_acquire.lua, multi_acquire.lua, rw_write.lua and
-- interval_claim.lua, so the fencing-token rule is written once. It
-- reads no KEYS or ARGV and writes nothing by itself: it only defines
-- issue_fence and FENCE_CORRUPT, and replies nothing (the script after it
-- does).
--
-- issue_fence(fence_key, t, keep_ms) returns the next token for the
-- resource, max(last + 1, server time in µs), t being the reply of TIME,
-- and stores it back; its second result is t's microseconds as six
-- digits. It returns nil, leaving the key as it was, when the key holds
-- anything but a decimal below 2^53 - 1 (above it, last + 1 is not exact
-- in Lua's doubles), or is a key of another type; the caller reports
-- corruption. The type error is caught (redis.pcall), not raised: SET
-- checks the type before it writes, and a raised error would end the
-- script with the caller's earlier writes in place (acquire.lua sets the
-- lease first and takes it back on nil).
--
-- The token is written with SET ... KEEPTTL GET, which returns the last
-- token in the same command. keep_ms is the fence TTL plus at least
-- 1/4096 of it: a write (re)sets that TTL when the key is new, when the
-- token comes from last + 1, or when the token's µs, divided by keep_ms *
-- 1000 / 4097, fall in another window than the last token's; other writes
-- keep the TTL the key has. Every token written with KEEPTTL lies in the
-- window of the token that last set the TTL, so less than keep_ms / 4097
-- ms after it, and the key lives at least keep_ms * 4096 / 4097 (at least
-- the fence TTL) after every token it stores: the rule that tokens exceed
-- every earlier one after the key expired, as long as the server clock
-- never steps back by more than the fence TTL, holds as if each write set
-- the TTL.
local function issue_fence(fence_key, t, keep_ms)
  local us = t[2]
  if #us < 6 then
    us = string.sub('00000' .. us, -6)
  end
  local s = t[1] .. us
  local tok = tonumber(s)
  local last = redis.pcall('SET', fence_key, s, 'KEEPTTL', 'GET')
  if type(last) == 'table' then
    if string.find(last.err, 'WRONGTYPE', 1, true) then
      return nil -- nothing written
    end
    error(last) -- another failure (OOM, ...) ends the script as redis.call would
  end
  if not last then
    redis.call('PEXPIRE', fence_key, keep_ms)
    return tok, us
  end
  local n = #last <= 16 and string.find(last, '^%d+$') and tonumber(last)
  if not n or n > 9007199254740990 then
    redis.call('SET', fence_key, last, 'KEEPTTL')
    return nil
  end
  if n >= tok then
    tok = n + 1
    redis.call('SET', fence_key, string.format('%.0f', tok), 'PX', keep_ms)
  else
    local w = tonumber(keep_ms) * 1000 / 4097
    if math.floor(n / w) ~= math.floor(tok / w) then
      redis.call('PEXPIRE', fence_key, keep_ms)
    end
  end
  return tok, us
end

-- FENCE_CORRUPT is the reason given when the fence key is not a token.
local FENCE_CORRUPT = 'fence is not a decimal below 2^53 - 1'
