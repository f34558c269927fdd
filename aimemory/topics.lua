-- topics: put topics at the front of a user's recent topics (a JSON list
-- of strings, most recent first, without duplicates, at most ARGV[1]).
-- KEYS[1] user context   ai:memory:user:{user_id}
-- ARGV[1] most topics kept
-- ARGV[2] user context TTL, ms (a longer TTL left is kept)
-- ARGV[3..] the topics, the most recent last
-- Returns {'ok', the list as stored}, {'corrupt', 1, why} when recent_topics is
-- not a JSON list of strings. Idempotent: adding the same topics again
-- gives the same list.
local cur = redis.call('HGET', KEYS[1], 'recent_topics')
local old = {}
if cur then
  local okd, v = pcall(cjson.decode, cur)
  if not okd or type(v) ~= 'table' or string.sub(cur, 1, 1) ~= '[' then
    return {'corrupt', 1, 'recent_topics is not a JSON list'}
  end
  for _, t in ipairs(v) do
    if type(t) ~= 'string' then
      return {'corrupt', 1, 'recent_topics holds a ' .. type(t)}
    end
    old[#old + 1] = t
  end
end
local max = tonumber(ARGV[1])
local seen, out = {}, {}
local function add(t)
  if not seen[t] and #out < max then
    seen[t] = true
    out[#out + 1] = json_str(t)
  end
end
for i = #ARGV, 3, -1 do
  add(ARGV[i])
end
for _, t in ipairs(old) do
  add(t)
end
local list = '[' .. table.concat(out, ',') .. ']'
redis.call('HSET', KEYS[1], 'recent_topics', list)
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return {'ok', list}
