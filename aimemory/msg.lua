-- msg.lua: read a stored message's role and tokens without decoding it.
-- The client writes {"role":"...", ..., "tokens":N} (role first, tokens
-- last), so both are read from the ends of the string; anything else (a
-- message written by another application in another field order) is
-- decoded with cjson. Both return nil for what is not a message.
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
