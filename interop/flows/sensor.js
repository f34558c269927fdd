// Seed 003, the sensor collector (docs/sensor-collector.md): its storage
// decision logic, its TTL and cleanup commands, and its readers' queries.
//
// The seed is a schema document: it gives redis-cli commands, the JSON
// value structures and a sketch of the storage decision, but no client
// code. So every command here is sent as the seed's redis-cli blocks
// spell it, word for word, through the client's raw command call
// (sendCommand on node-redis 4 and 6, call on ioredis 6), with the
// location, type and times from p; the JSON members are
// JSON.stringify of the seed's value structures, fields in the seed's
// order. The Go side runs every flow with all three clients.
'use strict'

// cmd sends one command as the seed's redis-cli blocks spell it.
function cmd (c, ...args) {
  args = args.map(String)
  return c.kind === 'ioredis6' ? c.call(...args) : c.sendCommand(args)
}

// iso is the seed's timestamp: "2025-01-01T12:00:00.000Z".
const iso = (ms) => new Date(ms).toISOString()

// "All keys: 86400 seconds (24 hours)"; MAX_SENSOR_HISTORY's default.
const TTL = 86400
const MAX_SENSOR_HISTORY = 1000

// store is the seed's "Storage Decision Logic" for one reading r:
// { type, location, at (Unix ms), collectedAt (Unix ms, default now),
//   state, entityId, sequence (motion), value, unit (temperature,
//   illuminance), data, topic (any other type) }.
async function store (c, r) {
  const now = Date.now()
  const collectedAt = r.collectedAt || now
  const sensorType = r.type
  const location = r.location
  if (sensorType === 'motion') {
    // seed 003 "Motion Sensor Storage", adapted: the seed documents the
    // value structure and the commands, not code; the commands are its
    // (ZADD by Unix ms, cleanup, TTL, lastMotionTime only for "on")
    const value = JSON.stringify({
      timestamp: iso(r.at),
      state: r.state,
      entity_id: r.entityId,
      sequence: r.sequence,
      collected_at: collectedAt
    })
    await cmd(c, 'ZADD', 'sensor:motion:' + location, r.at, value)
    await cmd(c, 'ZREMRANGEBYSCORE', 'sensor:motion:' + location, '-inf', '(' + (now - 86400000))
    await cmd(c, 'EXPIRE', 'sensor:motion:' + location, TTL)
    if (r.state === 'on') {
      await cmd(c, 'HSET', 'meta:motion:' + location, 'lastMotionTime', String(r.at))
      await cmd(c, 'EXPIRE', 'meta:motion:' + location, TTL)
    }
  } else if (sensorType === 'temperature' || sensorType === 'illuminance') {
    // seed 003 "Environmental Sensor Storage", adapted: its value
    // structures (temperature, illuminance) and commands, as code
    const value = { timestamp: iso(r.at), collected_at: collectedAt }
    value[sensorType] = r.value
    value[sensorType + '_unit'] = r.unit
    await cmd(c, 'ZADD', 'sensor:environmental:' + location, r.at, JSON.stringify(value))
    await cmd(c, 'ZREMRANGEBYSCORE', 'sensor:environmental:' + location, '-inf', '(' + (now - 86400000))
    await cmd(c, 'EXPIRE', 'sensor:environmental:' + location, TTL)
  } else {
    // seed 003 "Generic Sensor Storage", adapted: its value structure and
    // commands (LPUSH, newest at the head; LTRIM to MAX_SENSOR_HISTORY;
    // TTL; the metadata hash), as code
    const value = JSON.stringify({
      data: r.data,
      original_topic: r.topic,
      timestamp: iso(r.at),
      collected_at: collectedAt
    })
    await cmd(c, 'LPUSH', 'sensor:' + sensorType + ':' + location, value)
    await cmd(c, 'LTRIM', 'sensor:' + sensorType + ':' + location, 0, MAX_SENSOR_HISTORY - 1)
    await cmd(c, 'EXPIRE', 'sensor:' + sensorType + ':' + location, TTL)
    await cmd(c, 'HSET', 'meta:' + sensorType + ':' + location,
      'last_update', String(now), 'sensor_type', sensorType, 'location', location)
    await cmd(c, 'EXPIRE', 'meta:' + sensorType + ':' + location, TTL)
  }
}

module.exports = {
  // The collector stores p.readings, in order.
  async collect (c, p) {
    for (const r of p.readings) await store(c, r)
  },

  // seed 003 "Common Motion Queries" and the occupancy agent's needs.
  async motionQueries (c, p) {
    const now = Date.now()
    return {
      // seed 003 "Get recent motion events", literal
      recent: await cmd(c, 'ZREVRANGEBYSCORE', `sensor:motion:${p.location}`, '+inf', '-inf', 'LIMIT', 0, 10),
      // seed 003 "Has there been motion in study in last 10 minutes?", literal
      last10m: await cmd(c, 'ZRANGEBYSCORE', `sensor:motion:${p.location}`, `(${now - 600000}`, '+inf'),
      // seed 003 "Get time since last motion", literal
      lastMotionTime: await cmd(c, 'HGET', `meta:motion:${p.location}`, 'lastMotionTime'),
      // seed 003 "Troubleshooting": TTL should return ~86400 or less
      ttl: await cmd(c, 'TTL', `sensor:motion:${p.location}`)
    }
  },

  // seed 003 "Common Environmental Queries" and the light agent's needs.
  async envQueries (c, p) {
    const now = Date.now()
    return {
      // seed 003 "What's the current temperature in living room?", literal
      current: await cmd(c, 'ZREVRANGEBYSCORE', `sensor:environmental:${p.location}`, '+inf', '-inf', 'LIMIT', 0, 1),
      // seed 003 "Get recent temperature readings", literal
      recent: await cmd(c, 'ZREVRANGEBYSCORE', `sensor:environmental:${p.location}`, '+inf', '-inf', 'LIMIT', 0, 5),
      // seed 003 "Get environmental data from last hour", literal
      lastHour: await cmd(c, 'ZRANGEBYSCORE', `sensor:environmental:${p.location}`, `(${now - 3600000}`, '+inf'),
      ttl: await cmd(c, 'TTL', `sensor:environmental:${p.location}`)
    }
  },

  // seed 003 "Common Generic Sensor Queries".
  async genericQueries (c, p) {
    return {
      // seed 003 "Get most recent reading", literal
      latest: await cmd(c, 'LINDEX', `sensor:${p.type}:${p.location}`, 0),
      // seed 003 "Get last 10 readings", literal
      last10: await cmd(c, 'LRANGE', `sensor:${p.type}:${p.location}`, 0, 9),
      meta: await cmd(c, 'HGET', `meta:${p.type}:${p.location}`, 'sensor_type'),
      ttl: await cmd(c, 'TTL', `sensor:${p.type}:${p.location}`)
    }
  },

  // seed 003 "Get all sensor types in location": the seed's own
  // discovery (KEYS, on the tier's own database only).
  async typesInLocation (c, p) {
    // seed 003 "Get all sensor types in location", literal
    const metaKeys = await cmd(c, 'KEYS', `meta:*:${p.location}`)
    return metaKeys.map((k) => k.split(':')[1]).sort()
  },

  // The raw members of a sorted set or a list, for byte comparison.
  async members (c, p) {
    if (p.list) return await cmd(c, 'LRANGE', p.key, 0, -1)
    return await cmd(c, 'ZRANGE', p.key, 0, -1)
  }
}
