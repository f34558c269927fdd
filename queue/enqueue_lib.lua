-- enqueue_lib: the enqueue logic, the library of the two scripts that
-- enqueue a job, enqueue.lua and tick.lua (call.Uses). It is kept apart
-- from lib.lua, whose helpers neither uses: sent whole with lib.lua, an
-- enqueue cost the server about a fifth more (bench row queue Enqueue).

-- The reply memo's TTL (the replay window) and the furthest from now a job's
-- ready time may be (maxDelay and clockSlack), as Go has them
-- (TestLuaConstants).
local REPLY_TTL_MS = '180000'
local MAX_DELAY_MS = 31708800000

-- enqueue is the enqueue script, which the tick script runs too: it adds
-- job ARGV[1] (JSON ARGV[2]) with the KEYS and ARGV enqueue.lua lists,
-- reading and writing the reply memo KEYS[5] when memo is set, and
-- adding an enqueued event to the stream ev (capped at about evlen
-- entries) unless ev is nil. It returns 'ok', {'conflict', 'live'},
-- {'conflict', 'window'}, {'corrupt', i, why} or {'invalid', why}.
--
-- Replay: the memo is written first, with SET NX GET, which both tells a
-- resend (it finds the first run's outcome: "ok", "live" or "window") and
-- records a first run's. The outcome is known before that write but for
-- a live ID, which the jobs hash's HSETNX tells next (the memo is then
-- rewritten). Without the memo the ID was drawn for this request, so a
-- live job of that ID is this request's own, first run: its resend
-- reports ok and writes nothing.
--
-- Counting and order: enq_seq in the stats hash is the last score given
-- to a ready job, plus one per enqueue; when time has moved on past it,
-- it jumps to the current millisecond and enq_skipped adds up the jump,
-- so enq_seq - enq_skipped counts the enqueues (Stats reports it) with
-- one HINCRBY per enqueue (fifo_score does the same for the other
-- scripts, without the undo). The first enqueue of a millisecond (a
-- jump) checks the wake list; a dequeue that finds nothing ready moves
-- enq_seq back so that the next enqueue jumps (see dequeue.lua).
--
-- A key of the wrong type fails the script with nothing written: the
-- unique key is read before the memo; the jobs hash, the stats hash, the
-- wake list and the priority set are written (or read) in that order with
-- pcall, and a failure undoes the writes before it, memo included. A
-- stats counter that is not a count in [1, 2^53) after its increment is
-- corrupt too.
local function enqueue(memo, ev, evlen)
  local id = ARGV[1]
  local t = redis.call('TIME')
  local us = tonumber(t[2])
  local now = tonumber(t[1]) * 1000 + (us - us % 1000) / 1000
  local at, uniq, ready, outcome = now, 0, true, 'ok'
  if ARGV[3] then
    local delay, abs
    delay, abs, uniq = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
    if not (delay and abs and uniq) or delay < 0 or abs < 0 or uniq < 0 or delay > MAX_DELAY_MS or uniq > MAX_DELAY_MS then
      return {'invalid', 'delay, process-at or window out of range'}
    end
    at = math.max(now + delay, abs)
    if at > now + MAX_DELAY_MS then
      return {'invalid', 'ready time beyond the max delay'}
    end
    ready = at <= now
    if uniq > 0 and redis.call('GET', KEYS[6]) then
      outcome = 'window'
    end
  end

  if ev then
    redis.call('XLEN', ev) -- a stream of the wrong type fails before any write
  end
  if memo then
    local prev = redis.call('SET', KEYS[5], outcome, 'PX', REPLY_TTL_MS, 'NX', 'GET')
    if prev == 'ok' then
      return 'ok'
    elseif prev == 'live' or prev == 'window' then
      return {'conflict', prev}
    elseif prev then
      return {'corrupt', 5, 'reply memo is not a reply'}
    end
  end
  if outcome ~= 'ok' then
    return {'conflict', outcome}
  end

  -- The writes. A failure breaks out with the index of the key at fault
  -- (ki) and the error (err; nil when a counter is out of range); what was
  -- written is undone below: the job (wrote), and what enq_seq and
  -- enq_skipped were moved by (dseq, dskip).
  local wrote, dseq, dskip, ki, err, field = false, 0, 0, 1, nil, nil
  repeat
    local r = redis.pcall('HSETNX', KEYS[1], id, ARGV[2])
    if r == 0 then
      if not memo then
        return 'ok'
      end
      redis.call('SET', KEYS[5], 'live', 'PX', REPLY_TTL_MS)
      return {'conflict', 'live'}
    elseif r ~= 1 then
      err = r
      break
    end
    wrote, ki, field = true, 3, 'enq_seq'
    -- Numbers go to Redis as strings: a Lua number is formatted with
    -- "%.17g", about 2k instructions each, a string passed as it is.
    r = redis.pcall('HINCRBY', KEYS[3], 'enq_seq', '1')
    if type(r) ~= 'number' then
      err = r
      break
    end
    dseq = 1
    if r < 1 or r > 9007199254740991 then
      break
    end
    local score, waking = at * 1000, false
    if ready then
      local base = now * 1000
      if r < base then
        -- the first enqueue of this millisecond
        field = 'enq_skipped'
        local jump = string.format('%d', base - r)
        local j = redis.pcall('HINCRBY', KEYS[3], 'enq_skipped', jump)
        if type(j) ~= 'number' then
          err = j
          break
        end
        dskip = base - r
        if j < 0 or j > 9007199254740991 then
          break
        end
        redis.call('HINCRBY', KEYS[3], 'enq_seq', jump)
        dseq = 1 + base - r
        score = base
        ki = 4
        local n = redis.pcall('LLEN', KEYS[4])
        if type(n) ~= 'number' then
          err = n
          break
        end
        waking = n == 0
      elseif r > base + 999 then
        score = base + 999
      else
        score = r
      end
    end
    ki = 2
    -- %d: integer formatting, far cheaper than a float's
    r = redis.pcall('ZADD', KEYS[2], string.format('%d', score), id)
    if type(r) ~= 'number' then
      err = r
      break
    end
    if uniq > 0 then
      redis.call('SET', KEYS[6], '1', 'PX', ARGV[5])
    end
    if waking then
      redis.call('RPUSH', KEYS[4], '1')
    end
    if ev then
      redis.call('XADD', ev, 'MAXLEN', '~', evlen, '*', 'kind', 'enqueued', 'job_id', id, 'at', string.format('%d', now))
    end
    return 'ok'
  until true

  -- A write failed: undo the ones before it, and name the key.
  if dskip ~= 0 then
    redis.call('HINCRBY', KEYS[3], 'enq_skipped', -dskip)
  end
  if dseq ~= 0 then
    redis.call('HINCRBY', KEYS[3], 'enq_seq', -dseq)
  end
  if wrote then
    redis.call('HDEL', KEYS[1], id)
  end
  if memo then
    redis.call('DEL', KEYS[5])
  end
  if err == nil then
    return {'corrupt', 3, 'field ' .. field .. ' is out of range'}
  end
  local msg = type(err) == 'table' and err.err or tostring(err)
  if string.find(msg, 'WRONGTYPE', 1, true) then
    return {'corrupt', ki, 'wrong type (WRONGTYPE)'}
  elseif ki == 3 then
    return {'corrupt', 3, 'field ' .. field .. ' is not a count'}
  end
  return err -- any other error, as the server's error reply
end
