-- json_str.lua: a string as a JSON literal. Sent before the scripts
-- whose operation names call.JSONStr.

-- json_str returns s as a JSON string literal: quotes, backslashes and
-- control bytes escaped, '/' and everything else (UTF-8 included) kept as
-- it is, as Go's encoding/json writes it with HTML escaping off.
local function json_str(s)
  return '"' .. string.gsub(s, '[%c"\\]', function(c)
    if c == '"' then return '\\"' end
    if c == '\\' then return '\\\\' end
    if c == '\n' then return '\\n' end
    if c == '\r' then return '\\r' end
    if c == '\t' then return '\\t' end
    return string.format('\\u%04x', string.byte(c))
  end) .. '"'
end
