-- window: the messages of a conversation a prompt can hold, in one
-- round trip (uses lib.lua's role_of).
-- KEYS[1] conversation        ai:memory:conv:{user_id}:{conversation_id}
-- KEYS[2] conversation meta   ai:memory:conv-meta:{user_id}:{conversation_id}
-- KEYS[3] evicted, pending    ai:memory:conv-evicted:{user_id}:{conversation_id}
-- ARGV[1] most messages besides the system prompt (0: no limit)
-- ARGV[2] token budget (0: none)
-- ARGV[3] '1' to include the summary when it fits
-- Returns {'ok', system prompt or false, summary or false, summary tokens,
-- covered, lost, pending, length, tokens, messages newest first}, or
-- {'limit', system prompt tokens} when the budget cannot hold the system
-- prompt, {'corrupt', i, why} for data this package did not write.
-- The window is the pinned system prompt (the first message, when it is
-- a system message), then the summary if it fits, then the newest
-- messages that fit, in groups: a message and the tool results that
-- follow it are taken together or not at all, and tool results whose
-- call is not in the conversation are left out.

-- tokens_of(s): a stored message's tokens, read from the end of the
-- string without decoding it (the client writes "tokens":N last); any
-- other field order is decoded with cjson. nil for what is not a message.
local function tokens_of(s)
  local t = string.match(s, '"tokens":(%d+)}$', math.max(1, #s - 23))
  if t then
    return tonumber(t)
  end
  local okd, v = pcall(cjson.decode, s)
  if okd and type(v) == 'table' and type(v.tokens) == 'number' and v.tokens >= 0
      and v.tokens == math.floor(v.tokens) then
    return v.tokens
  end
  return nil
end

local maxn = tonumber(ARGV[1])
local budget = tonumber(ARGV[2])
local n = redis.call('LLEN', KEYS[1])
local sm = redis.call('HMGET', KEYS[2], 'summary', 'summary_tokens', 'covered', 'lost')
local pending = redis.call('LLEN', KEYS[3])
local used, first, sys = 0, 0, false
if n > 0 then
  local head = redis.call('LINDEX', KEYS[1], '0')
  if role_of(head) == 'system' then
    local t = tokens_of(head)
    if not t then
      return {'corrupt', 1, 'element 0 is not a message'}
    end
    if budget > 0 and t > budget then
      return {'limit', t}
    end
    sys, first, used = head, 1, t
  end
end
local summary, stok = false, 0
local covered, lost = to_int(sm[3] or '0', 0), to_int(sm[4] or '0', 0)
if not covered or not lost then
  return {'corrupt', 2, 'covered or lost is not a count'}
end
if sm[1] then
  stok = to_int(sm[2], 0)
  if not stok then
    return {'corrupt', 2, 'summary_tokens is not a count'}
  end
  if ARGV[3] == '1' and (budget == 0 or used + stok <= budget) then
    summary, used = sm[1], used + stok
  else
    stok = 0
  end
end
-- out takes messages newest first; the current group is out[gstart+1..],
-- taken back when it does not fit or its call is not in the conversation
local out, count, gstart, gtok = {}, 0, 0, 0
local i = n - 1
-- read the tail in chunks: LastN alone needs its n messages and the one
-- before them (to close a group), a budget some more
local size = 32
if maxn > 0 and budget == 0 then
  size = maxn + 1
end
local stop = false
while i >= first and not stop do
  local lo = math.max(first, i - size + 1)
  local chunk = redis.call('LRANGE', KEYS[1], lo, i)
  for j = #chunk, 1, -1 do
    local s = chunk[j]
    local r, t = role_of(s), tokens_of(s)
    if not r or not t then
      return {'corrupt', 1, 'element ' .. (lo + j - 1) .. ' is not a message'}
    end
    out[#out + 1] = s
    gtok = gtok + t
    if r ~= 'tool' then
      local gn = #out - gstart
      if (maxn > 0 and count + gn > maxn) or (budget > 0 and used + gtok > budget) then
        stop = true
        break
      end
      count, used, gstart, gtok = count + gn, used + gtok, #out, 0
    end
  end
  i = lo - 1
end
for x = #out, gstart + 1, -1 do
  out[x] = nil
end
return {'ok', sys, summary, stok, covered, lost, pending, n, used, out}
