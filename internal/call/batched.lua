-- batched.lua: one variadic command in chunks of at most 1000 arguments.
-- Sent before the scripts whose operation names call.Batched.

-- batched runs cmd on key with the elements of list (from index i to j,
-- default the whole list) as trailing arguments, in chunks of at most 1000
-- so that no call unpacks an unbounded list (Lua's stack holds about
-- 8000); extra, if given, is a list of arguments put before each chunk's
-- elements. It returns the sum of the replies when they are integers.
local function batched(cmd, key, list, i, j, extra)
  i = i or 1
  j = j or #list
  local total = 0
  while i <= j do
    local k = math.min(i + 999, j)
    local r
    if extra then
      local a = {}
      for x = 1, #extra do a[#a + 1] = extra[x] end
      for x = i, k do a[#a + 1] = list[x] end
      r = redis.call(cmd, key, unpack(a))
    else
      r = redis.call(cmd, key, unpack(list, i, k))
    end
    if type(r) == 'number' then total = total + r end
    i = k + 1
  end
  return total
end
