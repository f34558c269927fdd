-- to_num.lua: strict finite decimal numbers. Sent before the scripts
-- whose operation names call.ToNum.

-- to_num parses s as a finite decimal number (an optional sign, digits, an
-- optional fraction and exponent); anything else gives nil.
local function to_num(s)
  if type(s) == 'number' then
    if s ~= s or s == math.huge or s == -math.huge then return nil end
    return s
  end
  if type(s) ~= 'string' or #s == 0 or #s > 64 then return nil end
  if not (string.match(s, '^%-?%d+%.?%d*$') or string.match(s, '^%-?%d+%.?%d*[eE][%+%-]?%d+$')
      or string.match(s, '^%-?%.%d+$')) then
    return nil
  end
  local n = tonumber(s)
  if not n or n ~= n or n == math.huge or n == -math.huge then return nil end
  return n
end
