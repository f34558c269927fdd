-- messages: a page of a conversation's cached messages, newest first,
-- read-only (lib.lua's guard).
-- KEYS[1] chat:{tag}:conversation:{id}:messages  LIST  newest first
-- ARGV[1] return messages older than this ID (0: from the newest)
-- ARGV[2] at most this many
-- Message IDs go down by one along the list (append gives each message
-- the newest one's ID + 1), so the message with ID x sits at index
-- newest - x.
-- Returns {'ok', messages as stored}, or {'corrupt', 1, why} when the newest
-- entry is not a message this package wrote.
return guarded(function()
  local before, n = tonumber(ARGV[1]), tonumber(ARGV[2])
  local start = 0
  if before > 0 then
    local head = rc(1, 'LINDEX', 0)
    if not head then return {'ok', {}} end
    local h = to_int(string.match(head, '^{"id":(%d+),'), 1)
    if not h then bad(1, 'the newest entry is not a message this package wrote') end
    start = h - before + 1
    if start < 0 then start = 0 end
  end
  return {'ok', rc(1, 'LRANGE', start, start + n - 1)}
end)
