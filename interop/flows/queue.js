// Job queues of the AI platform (seed 001 §5 "Database 2: Job Queues"):
// the n8n execution queue queue:n8n:executions (a list, FIFO, items
// JSON), the priority sets queue:n8n:priority:{level} (score: "Unix
// timestamp"), the stats hash queue:stats:{queue_name} and the dead
// letter list queue:dlq:{queue_name} (7 days).
//
// Seed 001 gives the keys, types and item format but no client code: the
// functions below send the commands its layout implies (a producer
// LPUSHes the item's JSON, a FIFO consumer RPOPs and JSON.parses it, a
// reader HGETALLs the stats and LRANGEs the dead letters), marked
// "seed 001 §5, transcribed". node-redis 4 and 6 and ioredis 6 alike.
'use strict'

// cmd sends one command as the seed's layout spells it.
function cmd (c, ...args) {
  args = args.map(String)
  return c.kind === 'ioredis6' ? c.call(...args) : c.sendCommand(args)
}

// pairs turns a flat HGETALL / WITHSCORES reply into an object (node-redis
// sendCommand returns the flat array; ioredis's call too).
function pairs (flat) {
  if (!Array.isArray(flat)) return flat
  const o = {}
  for (let i = 0; i + 1 < flat.length; i += 2) o[flat[i]] = flat[i + 1]
  return o
}

function key (p, what) {
  return what === 'executions' ? `queue:${p.queue}:executions` : `queue:${what}:${p.queue}`
}

// sleep for ms.
function sleep (ms) {
  return new Promise(resolve => setTimeout(resolve, ms))
}

// pop is the seed's FIFO consumer's step: RPOP, then JSON.parse. It
// returns null on an empty list, else {raw, job} (job null and error set
// when the element is not the seed's item).
async function pop (c, p) {
  // seed 001 §5, transcribed: List (FIFO), the consumer pops the oldest
  const raw = await cmd(c, 'RPOP', key(p, 'executions'))
  if (raw === null || raw === undefined) return null
  let job = null
  let error = ''
  try {
    job = JSON.parse(raw)
  } catch (e) {
    error = e.message
  }
  if (!error && (job === null || typeof job !== 'object' || Array.isArray(job) || typeof job.id !== 'string' || !('workflow_id' in job))) {
    error = 'not an execution item'
    job = null
  }
  return { raw, job, error, keys: job ? Object.keys(job) : [] }
}

module.exports = {
  // produce: the seed's producer, one LPUSH of JSON.stringify(item) per
  // item of p.items; returns the strings pushed.
  async produce (c, p) {
    const pushed = []
    for (const item of p.items) {
      const raw = JSON.stringify(item)
      // seed 001 §5, transcribed: LPUSH queue:n8n:executions <item JSON>
      await cmd(c, 'LPUSH', key(p, 'executions'), raw)
      pushed.push(raw)
    }
    return pushed
  },

  // pushRaw: LPUSH of p.raw strings as given (malformed items).
  async pushRaw (c, p) {
    for (const raw of p.raw) {
      await cmd(c, 'LPUSH', key(p, 'executions'), raw)
    }
  },

  // consume: the seed's consumer, RPOP until the list is empty (or p.max
  // items); returns what it popped, oldest first.
  async consume (c, p) {
    const out = []
    for (let i = 0; i < (p.max || 10000); i++) {
      const got = await pop(c, p)
      if (got === null) break
      out.push(got)
    }
    return out
  },

  // consumeFor: a producer and a consumer beside Go workers: for p.ms
  // milliseconds, LPUSH the next of p.items (if any is left), then RPOP,
  // waiting p.idle ms whenever the list is empty; returns what it popped.
  async consumeFor (c, p) {
    const out = []
    const items = p.items || []
    const end = Date.now() + p.ms
    while (Date.now() < end) {
      if (items.length > 0) {
        // seed 001 §5, transcribed: LPUSH queue:n8n:executions <item JSON>
        await cmd(c, 'LPUSH', key(p, 'executions'), JSON.stringify(items.shift()))
      }
      const got = await pop(c, p)
      if (got === null) {
        await sleep(p.idle || 5)
        continue
      }
      out.push(got)
    }
    return out
  },

  // stats: the seed's reader of queue:stats:{queue_name}, fields as
  // documented; last_processed_at read as a timestamp.
  async stats (c, p) {
    // seed 001 §5, transcribed: HGETALL queue:stats:{queue_name}
    const h = pairs(await cmd(c, 'HGETALL', key(p, 'stats')))
    const last = Number(h.last_processed_at)
    return {
      total_processed: Number(h.total_processed),
      total_failed: Number(h.total_failed || 0),
      avg_process_time_ms: Number(h.avg_process_time_ms),
      last_processed_at: h.last_processed_at,
      last_processed_iso: Number.isFinite(last) ? new Date(last).toISOString() : null
    }
  },

  // deadLetters: the seed's reader of queue:dlq:{queue_name}: every
  // entry JSON.parsed, and the list's TTL.
  async deadLetters (c, p) {
    // seed 001 §5, transcribed: LRANGE queue:dlq:{queue_name} 0 -1; TTL
    const raw = await cmd(c, 'LRANGE', key(p, 'dlq'), 0, -1)
    const ttl = Number(await cmd(c, 'TTL', key(p, 'dlq')))
    return { ttl, entries: raw.map(r => JSON.parse(r)) }
  },

  // prioritySet: the seed's reader of queue:n8n:priority:{level}, the
  // score read as the seed says, a Unix timestamp (JavaScript: ms).
  async prioritySet (c, p) {
    // seed 001 §5, transcribed: ZRANGE queue:n8n:priority:{level} 0 -1 WITHSCORES
    const reply = await cmd(c, 'ZRANGE', `queue:${p.queue}:priority:${p.level}`, 0, -1, 'WITHSCORES')
    // the reply's shape is the client's: a flat array (node-redis 4) or
    // [member, score] pairs (node-redis 6, ioredis 6)
    const rows = []
    if (reply.length > 0 && Array.isArray(reply[0])) {
      for (const [m, s] of reply) rows.push([m, s])
    } else {
      for (let i = 0; i + 1 < reply.length; i += 2) rows.push([reply[i], reply[i + 1]])
    }
    return rows.map(([member, s]) => {
      const score = Number(s)
      return { member: String(member), score, year: new Date(score).getUTCFullYear() }
    })
  }
}
