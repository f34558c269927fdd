-- lease_fast.lua: the lease script's common cases, put before everything
-- else of lease.lua's script (call.Head): no closure of the prelude is
-- made when it returns. It uses no helper, and what it does not
-- recognise as its case falls through, before any write, to lease.lua,
-- which does the whole call again from the start.
--
-- KEYS and ARGV as lease.lua takes them. The cases, all without a forced
-- reload (ARGV[3] = '0') and with metadata as this package writes it
-- (no fresh_until_ms or state of an older version):
--   - a miss: no value, and none of the four fields read: the lease is
--     taken, and the metadata, new (or holding nothing a miss keeps),
--     lives for the lease (no PTTL to read);
--   - a hit: a value's hint and the value, fresh: ok('hit', ...);
--   - held: no hint, no value, a live lease of another owner: the waiter
--     is counted (ARGV[4] = '1') and ok('held', ...).
-- Each does what lease.lua does in that case (the same commands, replies
-- and TTLs), with now_ms written out and the deadline formatted as '%d'
-- (int_str's digits for the whole numbers below 2^53 it formats).
if ARGV[3] == '0' then
  local m = redis.pcall('HMGET', KEYS[2], 'hint', 'lease', 'fresh_until_ms', 'state')
  local h, l = m[1], m[2]
  if m.err or m[3] or m[4] then
    -- lease.lua repairs or reads it
  elseif h then
    local g = string.match(h, '^(%d+):%d+$')
    local v = g and redis.pcall('GET', KEYS[1])
    if type(v) == 'string' then
      local fresh = redis.call('PTTL', KEYS[1]) - tonumber(g)
      if fresh > 0 and fresh <= tonumber(ARGV[5]) then
        return {'ok', 'hit', v, fresh}
      end
    end
  elseif not redis.pcall('GET', KEYS[1]) then
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    if not l then
      redis.call('HSET', KEYS[2], 'lease', ARGV[1] .. ':' .. string.format('%d', now + tonumber(ARGV[2])))
      redis.call('PEXPIRE', KEYS[2], ARGV[2])
      return 'ok lease'
    end
    local o, dl = string.match(l, '^(.+):(%d+)$')
    dl = dl and tonumber(dl)
    if o and o ~= ARGV[1] and dl > now and dl - now <= 300000 then
      if ARGV[4] == '1' then
        redis.call('HINCRBY', KEYS[2], 'waiters', '1')
      end
      return string.format('ok held %d', dl - now)
    end
  end
end
