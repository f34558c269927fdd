// Seed 000 §3 (the home-automation backend's rate limits), node-redis 4
// and 6. The seed has no code for them, only the layout: a sorted set per
// identifier, scored by Date.now(), trimmed to the window
// (ZREMRANGEBYSCORE), counted (ZCARD), added to (ZADD) and given the
// window as TTL (EXPIRE); rate_limit's members are the timestamp string,
// sliding_limit's "timestamp + random". This is that check, written with
// the seed's commands (not a transcription).
'use strict'

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// hit checks and counts one request of p.id in the p.key log ("rate_limit"
// or "sliding_limit") against p.max per p.windowMs.
async function hit (c, p) {
  const key = `ha:${p.key}:${p.id}`
  const now = Date.now()
  await c.zRemRangeByScore(key, 0, now - p.windowMs)
  const count = await c.zCard(key)
  if (count >= p.max) return { allowed: false, count }
  const value = p.key === 'rate_limit' ? now.toString() : `${now}-${Math.random().toString(36).slice(2)}`
  await c.zAdd(key, { score: now, value })
  await c.expire(key, Math.ceil(p.windowMs / 1000))
  return { allowed: true, count: count + 1 }
}

module.exports = {
  // hits makes p.n requests, 2 ms apart (so that rate_limit's timestamp
  // members stay distinct), and returns each outcome.
  async hits (c, p) {
    const out = []
    for (let i = 0; i < p.n; i++) {
      out.push(await hit(c, p))
      await sleep(2)
    }
    return out
  }
}
