-- ingest_zset_fast: the common case of ingest_zset.lua, put before
-- everything else of its script (call.Head), so that no closure of the
-- prelude or of lib.lua is made when it returns. It uses no helper; what
-- it does not recognise as its case falls through, before any write, to
-- ingest_zset.lua, which does the whole call again from the start.
--
-- KEYS (as ingest_zset.lua takes them)
-- KEYS[1] sensor:motion:{location} or sensor:environmental:{location}
-- KEYS[2] sensor-index:types:{location}
-- KEYS[3] sensor-rollup:1m:{sensor_type}:{location}
-- KEYS[4] sensor-rollup:1h:{sensor_type}:{location}
-- KEYS[5] meta:motion:{location} (motion only)
-- ARGV (as ingest_zset.lua takes them; ARGV[1], [5], [8] and [9] are not
-- read here: no reading stored at the time means no resend and no
-- duplicate, whatever the policy)
-- ARGV[2] timestamp, Unix ms  ARGV[3] member (JSON)
-- ARGV[4] sensor type         ARGV[6] value for the rollups ("" for none)
-- ARGV[7] motion state ("on", "off", "")
-- ARGV[10] retention, ms      ARGV[11] max future, ms
-- ARGV[12] minute tier retention, ms (0: off)
-- ARGV[13] hour tier retention, ms (0: off)
-- Returns {'ok', 'stored'} ({'ok', "stored"} of the prelude, written out)
-- when it stored the reading; otherwise it returns nothing and falls
-- through to ingest_zset.lua.
--
-- The case: a timestamp within the retention and not too far ahead (as
-- ingest_zset.lua checks them); no reading stored at its millisecond (so
-- neither a resend nor a duplicate, whatever the policy); a value that
-- is empty or a plain decimal (Go writes the others with an exponent);
-- lastMotionTime (read for an "on" event) in digits and not ahead of the
-- clock; the type's index score in digits; each rollup bucket the write
-- updates absent, or one member as roll_write writes it, every field a
-- plain decimal (digits for start, count and the times). It then does
-- what ingest_zset.lua does, with the same commands and members, lib.lua
-- written out: int_str as '%d' (the same digits for the whole numbers
-- below 2^53 it formats), numbers read by arithmetic on strings the
-- patterns above have checked, a TTL's length as the ARGV that says it
-- when no time is ahead of the clock, and keep_until (PTTL, then PEXPIRE
-- when shorter) as PEXPIRE GT (which only moves an expiry later) and,
-- when that sets nothing, PEXPIRE NX (a key without a TTL gets one).
-- Conditions are if statements, never a comparison inside an and/or
-- expression: gopher-lua (miniredis) miscompiles some of those.
--
-- Why a twin: its bench row, BenchmarkSensorIngest/redschema, costs the
-- server 381k instructions per reading with this head and 495k without
-- it, touch_location's twin off in both (23 % less; 16 % on the
-- redschema-norollups row; callgrind, bench/README.md "Where a script's
-- instructions go", 2026-11-29): over the 20 % a twin must save.
repeat
  local t = redis.call('TIME')
  local tss, vs, rets = ARGV[2], ARGV[6], ARGV[10]
  local us, ts, ret = t[2] + 0, tss + 0, rets + 0
  local now = t[1] * 1000 + (us - us % 1000) / 1000
  local find, fmt = string.find, string.format
  if ts < now - ret then break end
  if ts > now and ts > now + ARGV[11] then break end
  local val
  if vs ~= '' then
    if #vs > 64 or not find(vs, '^%-?%d+%.?%d*$') then break end
    val = vs + 0
  end
  if #redis.call('ZRANGEBYSCORE', KEYS[1], tss, tss) > 0 then break end
  local on, last = false, nil
  if KEYS[5] and ARGV[7] == 'on' then
    on = true
    last = redis.call('HGET', KEYS[5], 'lastMotionTime')
    if last then
      if #last > 15 or not find(last, '^%d+$') then break end
      last = last + 0
      if last > now then break end
    end
  end
  local tcur = redis.call('ZSCORE', KEYS[2], ARGV[4])
  if tcur then
    if #tcur > 15 or not find(tcur, '^%d+$') then break end
    tcur = tcur + 0
  end
  -- The rollups at KEYS[3] (minutes) and KEYS[4] (hours): the bucket's
  -- start, its member (false for none) and its new member.
  local starts, olds, news = {}, {}, {}
  local fine = true
  for i = 3, 4 do
    local keep, span = ARGV[i + 9] + 0, 3600000
    if i == 3 then span = 60000 end
    local b = ts - ts % span
    if val and keep > 0 and b >= now - keep then
      local bs = fmt('%d', b)
      local cur = redis.call('ZRANGEBYSCORE', KEYS[i], bs, bs)
      local m = cur[1]
      starts[i], olds[i] = bs, m or false
      if not m then
        -- fmt_num(val) as the sum, val as the rest
        local sum
        if val == val - val % 1 and val < 1e15 and val > -1e15 and not (val == 0 and 1 / val < 0) then
          sum = fmt('%d', val)
        else
          sum = fmt('%.17g', val)
        end
        news[i] = bs .. ':1:' .. sum .. ':' .. vs .. ':' .. vs .. ':' .. vs .. ':' .. tss .. ':' .. vs .. ':' .. tss
      else
        -- start:count:sum:min:max:first:first_ts:last:last_ts (at most
        -- 200 bytes of plain decimals: every one finite)
        local r1, r2, r3, r4, r5, r6, r7, r8, r9
        if not cur[2] and #m <= 200 then
          r1, r2, r3, r4, r5, r6, r7, r8, r9 = string.match(m,
            '^(%d+):(%d+):(%-?%d+%.?%d*):(%-?%d+%.?%d*):(%-?%d+%.?%d*):(%-?%d+%.?%d*):(%d+):(%-?%d+%.?%d*):(%d+)$')
        end
        if r1 ~= bs or #r2 > 14 or #r7 > 15 or #r9 > 15 then
          fine = false
          break
        end
        local sum, cs = r3 + val, '%d:%.17g'
        if sum == sum - sum % 1 and sum < 1e15 and sum > -1e15 and not (sum == 0 and 1 / sum < 0) then cs = '%d:%d' end
        cs = fmt(cs, r2 + 1, sum)
        if val < r4 + 0 then r4 = vs end
        if val > r5 + 0 then r5 = vs end
        if ts < r7 + 0 then r6, r7 = vs, tss end
        if ts >= r9 + 0 then r8, r9 = vs, tss end
        news[i] = bs .. ':' .. cs .. ':' .. r4 .. ':' .. r5 .. ':' .. r6 .. ':' .. r7 .. ':' .. r8 .. ':' .. r9
      end
    end
  end
  if not fine then break end

  local cut, px = fmt('(%d', now - ret), rets
  if ts > now then px = fmt('%d', ts - now + ret) end
  redis.call('ZADD', KEYS[1], tss, ARGV[3])
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', cut)
  if redis.call('PEXPIRE', KEYS[1], px, 'GT') == 0 then redis.call('PEXPIRE', KEYS[1], px, 'NX') end
  if on then
    if not last or ts > last then
      redis.call('HSET', KEYS[5], 'lastMotionTime', tss)
    end
    if redis.call('PEXPIRE', KEYS[5], px, 'GT') == 0 then redis.call('PEXPIRE', KEYS[5], px, 'NX') end
  end
  if not tcur or ts > tcur then
    redis.call('ZADD', KEYS[2], tss, ARGV[4])
  end
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', cut)
  if redis.call('PEXPIRE', KEYS[2], px, 'GT') == 0 then redis.call('PEXPIRE', KEYS[2], px, 'NX') end
  for i = 3, 4 do
    local m, bs = olds[i], starts[i]
    if m then
      -- add before removing (news[i] counts one more reading, so it is
      -- never m): removing the only member would delete the key and its
      -- TTL
      redis.call('ZADD', KEYS[i], bs, news[i])
      redis.call('ZREM', KEYS[i], m)
    elseif m == false then
      local keeps = ARGV[i + 9]
      local keep, b = keeps + 0, bs + 0
      local kpx = keeps
      if b > now then kpx = fmt('%d', b - now + keep) end
      redis.call('ZADD', KEYS[i], bs, news[i])
      redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', fmt('(%d', now - keep))
      if redis.call('PEXPIRE', KEYS[i], kpx, 'GT') == 0 then redis.call('PEXPIRE', KEYS[i], kpx, 'NX') end
    end
  end
  return {'ok', 'stored'}
until true
