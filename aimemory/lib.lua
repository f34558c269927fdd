-- lib.lua: the aimemory package's library, sent whole (call.Uses) after
-- the prelude and before append.lua, user_read.lua and window.lua; it runs
-- nothing by itself, builds no key and returns nothing. It reads no KEYS;
-- the ARGV it reads are today's (below).
--
-- today(now): which local day of the configured zone the server clock is
-- in (see days in day.go). A script that calls it takes, first:
-- ARGV[1..4] the starts (Unix ms) of local days -1, 0, +1 and +2
-- ARGV[5..7] the dates ("2026-01-16") of local days -1, 0 and +1
-- It returns the date of the day now (Unix ms) is in and the end of that
-- day (Unix ms), or nil when now is outside the three days (the caller
-- then returns {'none', 'clock', now} and the client asks again).
local function today(now)
  for i = 1, 3 do
    if now >= tonumber(ARGV[i]) and now < tonumber(ARGV[i + 1]) then
      return ARGV[i + 4], tonumber(ARGV[i + 1])
    end
  end
  return nil
end

-- day_total returns the user's tokens of the day day from its context's
-- fields tokens_day and total_tokens_today (0 when they count another
-- day), or nil and the reason when they are not what this package writes.
local function day_total(fday, ftotal, day)
  if not fday then
    return 0
  end
  if not string.match(fday, '^%d%d%d%d%-%d%d%-%d%d$') then
    return nil, 'tokens_day is not a date'
  end
  local total = to_int(ftotal, 0)
  if not total then
    return nil, 'total_tokens_today is not a count'
  end
  if fday ~= day then
    return 0
  end
  return total
end

-- role_of(s): a stored message's role, read without decoding it. The
-- client writes {"role":"...", ..., "tokens":N} (role first, tokens
-- last), so the role is read from the start of the string; anything else
-- (a message written by another application in another field order) is
-- decoded with cjson. nil for what is not a message.
local function role_of(s)
  local r = string.match(s, '^{"role":"(%a+)"')
  if r then
    return r
  end
  local okd, v = pcall(cjson.decode, s)
  if okd and type(v) == 'table' and type(v.role) == 'string' then
    return v.role
  end
  return nil
end
