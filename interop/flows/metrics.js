// Seed 000 §1-2 (the home-automation backend's request metrics), node-redis
// 4 and 6. The seed's code for them is two lines of its "Example Usage"
// (transcribed literally in requests below); the connection count is the
// layout's description ("goes up with each new connection and down with
// each closed connection"), written with its commands INCR and DECR.
'use strict'

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// one counts one request as the seed's example does.
async function one (client) {
  // seed 000 §Example Usage, literal
  // Increment request counter
  await client.incrBy('ha:requests:total', 1)
  await client.incrBy('ha:requests:endpoint:GET /api/forum/questions', 1)
}

module.exports = {
  // requests counts p.n requests, the seed's two incrBy each.
  async requests (c, p) {
    for (let i = 0; i < p.n; i++) await one(c)
    return null
  },

  // connections opens p.n connections, p.ms apart: INCR on connect, and
  // DECR on close for all but the last p.leave (still open when it
  // returns); each request is counted as in requests. It returns the
  // count its last INCR or DECR saw.
  async connections (c, p) {
    let last = null
    for (let i = 0; i < p.n; i++) {
      last = await c.incr('ha:connections:http:current')
      await one(c)
      if (p.ms) await sleep(p.ms)
      if (i < p.n - p.leave) last = await c.decr('ha:connections:http:current')
    }
    return last
  },

  // incr and decr are one connection opening and closing.
  async incr (c) { return c.incr('ha:connections:http:current') },
  async decr (c) { return c.decr('ha:connections:http:current') },

  // read GETs each key of p.keys (full keys, "ha:" included), as the
  // service's own dashboard reads its counters: key -> value (null when
  // absent).
  async read (c, p) {
    const out = {}
    for (const k of p.keys) out[k] = await c.get(k)
    return out
  }
}
