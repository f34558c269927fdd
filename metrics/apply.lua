-- apply: one flush batch's operations on the keys of one cluster slot,
-- once per (instance, batch): a resent batch (go-redis resends a pipeline
-- whose reply was lost) finds its sequence number in the ledger and does
-- nothing.
-- KEYS[1]   ledger  metrics:ledger:{slot}
-- KEYS[2..] the keys the operations name by index (all in KEYS[1]'s slot)
-- ARGV[1] instance ID
-- ARGV[2] batch sequence number (>= 1, increasing per instance)
-- ARGV[3] ledger TTL, ms
-- ARGV[4] heartbeat TTL of gauge contributions, ms
-- ARGV[5..] operations, each a code, a KEYS index i, then its arguments:
--   i  i delta ttl           INCRBY KEYS[i] (then PEXPIRE ttl unless 0)
--   f  i delta ttl           INCRBYFLOAT
--   h  i field delta ttl     HINCRBY (a field that is not a number skips
--                            this operation alone: see the reply)
--   g  i field delta ttl     HINCRBYFLOAT
--   p  i field value         gauge contribution: HSET KEYS[i] field
--                            "value:expires_ms:written_ms" ("" deletes it;
--                            value within ±(2^53 - 1), as parts are read)
--   s  i parts dim mode extra ttl
--                            gauge value from the live contributions of dim
--                            in KEYS[parts]: mode sum or last -> SET KEYS[i];
--                            mode max -> SET KEYS[i] to sum + extra if
--                            greater than its value
--   l  i totals dim value stamp ttl
--                            Latest gauge: value, Set at server time stamp
--                            (Unix ms), goes to field dim of KEYS[totals]
--                            as "value:stamp" and to KEYS[i] unless that
--                            field holds a later Set (on equal stamps the
--                            greater value wins, so flush order never
--                            matters); both keys' TTLs refreshed (a
--                            field dim that is not value:stamp skips this
--                            operation alone: see the reply)
--   x  i parts value pttl    shared count (WithSharedKeys): this instance's
--                            contribution to KEYS[i] becomes value (""
--                            withdraws it): INCRBY KEYS[i] by value minus
--                            its contribution in field "-|instance" of
--                            KEYS[parts], minus the contributions there of
--                            instances whose heartbeat expired (deleted);
--                            other writers' INCR/DECR of KEYS[i] add up;
--                            KEYS[parts] then lives pttl ms
--   m  i peak others         shared maximum: SET KEYS[i] to base + peak (this
--                            instance's highest in-flight count since its
--                            last flush) if greater; base = the other
--                            writers' part of the shared count as this
--                            script's x operation left it (the count minus
--                            this instance's), else others ("" = 0)
--   c  i n sec count ...     per-second counts: HINCRBY KEYS[i] sec count
--                            for n pairs (none if a field of the n is not
--                            an integer); fields older than 60s trimmed
--   v  i persec lag mode     speed from KEYS[persec]: the count of the
--                            second now - lag -> SET KEYS[i] (mode speed),
--                            or the highest count of a second up to then
--                            if greater than KEYS[i] (mode max)
-- Every operation is checked (its code, KEYS indexes, TTLs and the values
-- the script parses) before the first write: a batch refused as invalid
-- applies nothing and records no ledger entry. An operation whose key
-- holds foreign data is skipped after reading it and before writing. A
-- write the server refuses (OOM, MISCONF) fails the batch: nothing was
-- written, and the recorder resends it.
-- Returns {'ok', 'applied', {i...}, now, shared, {i, field, why, ...}}
-- with the KEYS indexes whose data this package did not write (their
-- operations were skipped), the other writers' part of the count an x
-- operation left ("" without one), and the hash fields whose data this
-- package did not write where the key is a hash of ours (a totals hash's
-- field that is not a number or not value:stamp): KEYS index (a string),
-- field and Redis's reason, for each h, g or l operation skipped alone,
-- the key's other fields applied; {'ok', 'dup', {}, now, ''} for a batch
-- applied before, {'corrupt', 1,
-- why} when the ledger is not a hash, {'invalid', why} for a malformed
-- batch (nothing written); now is the server clock (Unix ms), from which
-- the recorder learns its offset to stamp Latest gauges' Sets.
-- Sent after the prelude and parts.lua, the package library (call.Uses:
-- bounded, live_parts).
local inst = ARGV[1]
local seq = to_int(ARGV[2], 1)
local ledger_ttl = to_int(ARGV[3], 1)
local hb = to_int(ARGV[4], 1)
if not seq or not ledger_ttl or not hb then
  return {'invalid', 'bad batch header'}
end
local prev = redis.pcall('HGET', KEYS[1], inst)
if type(prev) == 'table' then
  return {'corrupt', 1, 'ledger is not a hash'}
end
local now = now_ms()
if prev then
  local s = to_int(string.match(prev, '^(%d+):'))
  if s and s >= seq then
    return {'ok', 'dup', {}, int_str(now), ''}
  end
end

-- First pass: check every operation before anything is written. An
-- invalid operation in the middle of the batch must not leave the ones
-- before it applied without the ledger entry: the recorder resends a
-- failed batch, and would apply them again at every flush. Checked: the
-- code, the KEYS indexes (never the ledger's), the TTLs, and the values
-- the second pass parses; deltas and fields go to Redis as they are (a
-- bad one fails its command, which skips that operation and is
-- reported). Cost: Lua work only, no Redis command; TTLs are memoized,
-- as a batch repeats a few.
local nargs, nkeys = #ARGV, #KEYS
-- (tonumber raises on nil: an ARGV past the end)
local function num(s)
  return s ~= nil and tonumber(s)
end
local function key_ok(s)
  local i = num(s)
  return i and i >= 2 and i <= nkeys and i % 1 == 0
end
local ms_ok = {}
local function ttl_ok(s)
  if s == nil then return false end
  local v = ms_ok[s]
  if v == nil then
    v = to_int(s, 0) ~= nil
    ms_ok[s] = v
  end
  return v
end
local a = 5
while a <= nargs do
  local op, ok, w = ARGV[a], false, 0
  if op == 'i' or op == 'f' then
    w = 4
    ok = key_ok(ARGV[a + 1]) and ttl_ok(ARGV[a + 3])
  elseif op == 'p' then
    -- a value beyond ±(2^53 - 1) would be written, then dropped as a
    -- dead part by live_parts
    w = 4
    ok = key_ok(ARGV[a + 1]) and (ARGV[a + 3] == '' or to_int(ARGV[a + 3]) ~= nil)
  elseif op == 'h' or op == 'g' then
    w = 5
    ok = key_ok(ARGV[a + 1]) and ttl_ok(ARGV[a + 4])
  elseif op == 's' then
    w = 7
    ok = key_ok(ARGV[a + 1]) and key_ok(ARGV[a + 2]) and num(ARGV[a + 5]) and ttl_ok(ARGV[a + 6])
  elseif op == 'l' then
    w = 7
    ok = key_ok(ARGV[a + 1]) and key_ok(ARGV[a + 2]) and to_int(ARGV[a + 4]) ~= nil
      and to_int(ARGV[a + 5], 0) ~= nil and ttl_ok(ARGV[a + 6])
  elseif op == 'x' then
    w = 5
    ok = key_ok(ARGV[a + 1]) and key_ok(ARGV[a + 2]) and (ARGV[a + 3] == '' or to_int(ARGV[a + 3]) ~= nil)
      and ttl_ok(ARGV[a + 4])
  elseif op == 'm' then
    w = 4
    ok = key_ok(ARGV[a + 1]) and to_int(ARGV[a + 2]) ~= nil and (ARGV[a + 3] == '' or to_int(ARGV[a + 3]) ~= nil)
  elseif op == 'c' then
    -- c i n sec count ...: n >= 1 pairs of integers
    local n = to_int(ARGV[a + 2], 1, nargs)
    ok = n ~= nil and key_ok(ARGV[a + 1])
    if ok then
      w = 3 + 2 * n
      for j = a + 3, a + w - 1 do
        if not to_int(ARGV[j]) then ok = false end
      end
    end
  elseif op == 'v' then
    w = 5
    ok = key_ok(ARGV[a + 1]) and key_ok(ARGV[a + 2]) and num(ARGV[a + 3])
  else
    return {'invalid', 'unknown operation ' .. tostring(op)}
  end
  if not ok or a + w - 1 > nargs then
    return {'invalid', 'bad arguments of operation ' .. op .. ' at ARGV[' .. a .. ']'}
  end
  a = a + w
end

-- Second pass: apply the operations.
local bad, seen = {}, {}
-- bad_fields: KEYS index, field, why of each operation skipped because
-- one field of a hash of ours holds foreign data (the key's other
-- operations apply, so the key is not in bad)
local bad_fields = {}
local function field_failed(i, f, why)
  bad_fields[#bad_fields + 1] = int_str(i)
  bad_fields[#bad_fields + 1] = f
  bad_fields[#bad_fields + 1] = why
end
-- refused raises an error reply whose code is neither ERR nor WRONGTYPE
-- (OOM, MISCONF, NOREPLICAS: the server refused the script's first write,
-- so nothing was written) as redis.call would: the batch fails and the
-- recorder resends it, where calling it foreign data would drop deltas.
local function refused(r)
  local code = string.match(r.err, '^(%u+) ')
  if code and code ~= 'ERR' and code ~= 'WRONGTYPE' then
    error(r)
  end
end
local function failed(i, r)
  if type(r) == 'table' and r.err then
    refused(r)
    if not seen[i] then
      seen[i] = true
      bad[#bad + 1] = i
    end
    return true
  end
  return false
end
local expired = {}
local function expire(k, ttl)
  if ttl ~= '0' and not expired[k] then
    expired[k] = true
    redis.call('PEXPIRE', k, ttl)
  end
end
-- summaries[i]: dim -> {sum, latest write ms, latest value} of the live
-- contributions in KEYS[i]; dead or foreign fields are dropped.
local summaries = {}
local function summary(i)
  if summaries[i] then
    return summaries[i]
  end
  local r = redis.pcall('HGETALL', KEYS[i])
  if failed(i, r) then
    return nil
  end
  local out, _, dead = live_parts(r, now)
  if #dead > 0 then
    batched('HDEL', KEYS[i], dead)
  end
  summaries[i] = out
  return out
end
-- current returns KEYS[i]'s integer value (-1 if absent, so that a
-- maximum writes it), or nil after recording KEYS[i] as foreign data: a
-- maximum is never negative, a sum may be.
local function current(i, mode)
  local r = redis.pcall('GET', KEYS[i])
  if failed(i, r) then
    return nil
  end
  if not r then
    return -1
  end
  local n = to_int(r)
  if not n then
    failed(i, { err = 'not an integer' })
    return nil
  end
  if mode == 'max' and n < 0 then
    failed(i, { err = 'not a non-negative integer' })
    return nil
  end
  return n
end
local nows = math.floor(now / 1000)
local shared_others -- an x operation's count minus this instance's part
local a = 5
while a <= #ARGV do
  local op, i = ARGV[a], tonumber(ARGV[a + 1])
  local k = KEYS[i]
  if op == 'i' or op == 'f' then
    local cmd = 'INCRBY'
    if op == 'f' then cmd = 'INCRBYFLOAT' end
    if not failed(i, redis.pcall(cmd, k, ARGV[a + 2])) then
      expire(k, ARGV[a + 3])
    end
    a = a + 4
  elseif op == 'h' or op == 'g' then
    local cmd = 'HINCRBY'
    if op == 'g' then cmd = 'HINCRBYFLOAT' end
    local r = redis.pcall(cmd, k, ARGV[a + 2], ARGV[a + 3])
    if type(r) == 'table' and r.err then refused(r) end
    if type(r) == 'table' and r.err and not string.find(r.err, 'WRONGTYPE', 1, true) then
      -- Redis left the hash as it was: only this field's delta is
      -- dropped, and reported with why (the field is not a number, or
      -- the sum would leave the range Redis keeps)
      local why = r.err
      if string.find(why, 'hash value is not', 1, true) then
        why = 'holds data this package did not write (' .. why .. ')'
      end
      field_failed(i, ARGV[a + 2], why)
    elseif not failed(i, r) then
      expire(k, ARGV[a + 4])
    end
    a = a + 5
  elseif op == 'p' then
    local r
    if ARGV[a + 3] == '' then
      r = redis.pcall('HDEL', k, ARGV[a + 2])
    else
      r = redis.pcall('HSET', k, ARGV[a + 2], ARGV[a + 3] .. ':' .. int_str(now + hb) .. ':' .. int_str(now))
    end
    if not failed(i, r) and redis.call('PTTL', k) < hb then
      redis.call('PEXPIRE', k, hb)
    end
    summaries[i] = nil
    a = a + 4
  elseif op == 's' then
    local p, dim, mode, extra, ttl = tonumber(ARGV[a + 2]), ARGV[a + 3], ARGV[a + 4], tonumber(ARGV[a + 5]), ARGV[a + 6]
    -- the target first: summary() deletes dead contributions, which
    -- waits until the operation is known to apply
    local old = current(i, mode)
    local sm = old and summary(p)
    if sm and old then
      local s = sm[dim] or { 0, -1, 0 }
      if mode == 'max' then
        local m = bounded(s[1] + extra)
        if m > old then
          redis.call('SET', k, int_str(m))
        end
      else
        local v = s[1]
        if mode == 'last' then v = s[3] end
        redis.call('SET', k, int_str(v))
        expire(k, ttl)
      end
    end
    a = a + 7
  elseif op == 'l' then
    -- value and stamp were checked by the first pass
    local t, dim, v, st, ttl = tonumber(ARGV[a + 2]), ARGV[a + 3], to_int(ARGV[a + 4]), to_int(ARGV[a + 5], 0), ARGV[a + 6]
    local r = redis.pcall('HGET', KEYS[t], dim)
    if not failed(t, r) and not failed(i, redis.pcall('GET', k)) then
      local ov, os
      local good = true
      if r then
        ov, os = string.match(r, '^(%-?%d+):(%d+)$')
        ov, os = to_int(ov), to_int(os)
        if not ov or not os then
          -- this dimension's field only: the other dimensions apply
          field_failed(t, dim, 'holds data this package did not write (not value:stamp)')
          good = false
        end
      end
      if good then
        if not r or st > os or (st == os and v > ov) then
          redis.call('SET', k, int_str(v))
          redis.call('HSET', KEYS[t], dim, int_str(v) .. ':' .. int_str(st))
        end
        expire(k, ttl)
        expire(KEYS[t], ttl)
      end
    end
    a = a + 7
  elseif op == 'x' then
    local p, v, pttl = tonumber(ARGV[a + 2]), ARGV[a + 3], ARGV[a + 4]
    local own = '-|' .. inst
    local r = redis.pcall('HGETALL', KEYS[p])
    local g = redis.pcall('GET', k)
    if not failed(p, r) and not failed(i, g) then
      local old = 0
      if g then
        old = to_int(g)
        if not old then failed(i, { err = 'not an integer' }) end
      end
      if old then
        local delta, dead, mine = 0, {}, 0
        for j = 1, #r, 2 do
          local pv, pe = string.match(r[j + 1], '^(%-?%d+):(%d+):%d+$')
          pv, pe = to_int(pv), to_int(pe)
          if r[j] == own then
            -- ours, even if our heartbeat lapsed: still in KEYS[i]
            mine = pv or 0
          elseif not pv or not pe or pe <= now then
            -- a dead instance's count (or a foreign field): taken back
            dead[#dead + 1] = r[j]
            if pv and pe then delta = delta - pv end
          end
        end
        local nv = 0
        if v ~= '' then nv = to_int(v) end -- checked by the first pass
        delta = delta + nv - mine
        if #dead > 0 then batched('HDEL', KEYS[p], dead) end
        if v == '' then
          redis.call('HDEL', KEYS[p], own)
        else
          redis.call('HSET', KEYS[p], own, v .. ':' .. int_str(now + hb) .. ':' .. int_str(now))
        end
        redis.call('PEXPIRE', KEYS[p], pttl)
        if delta ~= 0 then old = redis.call('INCRBY', k, delta) end
        shared_others = old - nv
      end
    end
    a = a + 5
  elseif op == 'm' then
    local peak, base = to_int(ARGV[a + 2]), to_int(ARGV[a + 3]) or 0
    if shared_others then base = shared_others end
    local old = current(i, 'max')
    if old and peak and base + peak > old then
      redis.call('SET', k, int_str(base + peak))
    end
    a = a + 4
  elseif op == 'c' then
    -- every field is read and checked before the first HINCRBY, so a
    -- foreign field skips the whole operation (nothing added), as the
    -- recorder reports it
    local n = tonumber(ARGV[a + 2])
    local fs = {}
    for j = 0, n - 1 do fs[j + 1] = ARGV[a + 3 + 2 * j] end
    local r = redis.pcall('HMGET', k, unpack(fs))
    local okk = not failed(i, r)
    if okk then
      for j = 1, n do
        if r[j] and not to_int(r[j]) then
          okk = false
          failed(i, { err = 'not an integer' })
          break
        end
      end
    end
    if okk then
      for j = 0, n - 1 do
        redis.call('HINCRBY', k, ARGV[a + 3 + 2 * j], ARGV[a + 4 + 2 * j])
      end
      local old = {}
      for _, f in ipairs(redis.call('HKEYS', k)) do
        local s = to_int(f)
        if not s or s < nows - 60 then old[#old + 1] = f end
      end
      if #old > 0 then batched('HDEL', k, old) end
      redis.call('PEXPIRE', k, '120000')
    end
    a = a + 3 + 2 * n
  elseif op == 'v' then
    local p, lag, mode = tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), ARGV[a + 4]
    local upto = nows - lag
    local r = redis.pcall('HGETALL', KEYS[p])
    local old = current(i)
    if not failed(p, r) and old then
      if mode == 'speed' then
        local v = 0
        for j = 1, #r, 2 do
          if to_int(r[j]) == upto then v = to_int(r[j + 1]) or 0 end
        end
        redis.call('SET', k, int_str(v))
      else
        local m = math.max(old, 0)
        for j = 1, #r, 2 do
          local s, c = to_int(r[j]), to_int(r[j + 1])
          if s and c and s <= upto and c > m then m = c end
        end
        if m > old then redis.call('SET', k, int_str(m)) end
      end
    end
    a = a + 5
  end
end
redis.call('HSET', KEYS[1], inst, int_str(seq) .. ':' .. int_str(now))
redis.call('PEXPIRE', KEYS[1], ledger_ttl)
if redis.call('HLEN', KEYS[1]) > 64 then
  local r = redis.call('HGETALL', KEYS[1])
  local gone = {}
  for j = 1, #r, 2 do
    local w = to_int(string.match(r[j + 1], ':(%d+)$'))
    if not w or w < now - ledger_ttl then gone[#gone + 1] = r[j] end
  end
  if #gone > 0 then batched('HDEL', KEYS[1], gone) end
end
local sv = ''
if shared_others then sv = int_str(shared_others) end
return {'ok', 'applied', bad, int_str(now), sv, bad_fields}
