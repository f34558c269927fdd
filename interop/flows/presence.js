// Presence keys of three reference systems:
//   seed 000 §5, admin availability (node-redis 4 and 6);
//   seed 002, the presence service's presence key and connections hash
//     (ioredis 6, node-redis 4 and 6);
//   seed 004 §1-2, the chat app's compact presence and typing indicators
//     (ioredis 6).
'use strict'

// cmd sends one command as the seed's redis-cli blocks spell it.
function cmd (c, ...args) {
  args = args.map(String)
  return c.kind === 'ioredis6' ? c.call(...args) : c.sendCommand(args)
}

module.exports = {
  // seed 000 §5: set admin as online/available.
  async adminOnline (c, p) {
    // seed 000 §5, literal (node-redis drops the positional EX: no TTL)
    await c.set(`ha:admin:${p.admin}:presence`, 'online', 'EX', 1800)
  },

  // seed 000 §5: get admin workload for assignment balancing.
  async adminAvailable (c, p) {
    // seed 000 §5, literal
    const assignments = await c.sCard(`ha:admin:${p.admin}:assignments`)
    const isOnline = await c.get(`ha:admin:${p.admin}:presence`)
    if (isOnline === 'online' && assignments < 10) {
      // Admin is available for new assignments
      return { available: true, isOnline, assignments }
    }
    return { available: false, isOnline, assignments }
  },

  // seed 002 "Connection Events": user connects (and the heartbeat, the
  // same commands), with the documented JSON values.
  async svcConnect (c, p) {
    const now = Date.now()
    const conn = JSON.stringify({ connectedAt: p.connectedAt || now, lastSeen: now, metadata: p.metadata })
    const presence = JSON.stringify({
      status: 'online',
      lastSeen: now,
      activeConnections: p.activeConnections,
      metadata: { device: p.metadata.device, lastActivity: 'active' }
    })
    // seed 002 Key Operations, literal
    await cmd(c, 'HSET', `connections:${p.user}`, p.conn, conn)
    await cmd(c, 'EXPIRE', `connections:${p.user}`, 60)
    await cmd(c, 'SETEX', `presence:${p.user}`, 60, presence)
  },

  // seed 002 "Connection Events": user disconnects; returns HLEN.
  async svcDisconnect (c, p) {
    // seed 002 Key Operations, literal
    await cmd(c, 'HDEL', `connections:${p.user}`, p.conn)
    return await cmd(c, 'HLEN', `connections:${p.user}`) // Check remaining connections
  },

  // seed 002 "Check User Online Status".
  async svcIsOnline (c, p) {
    // seed 002 Example Usage, literal (redis: the Node client)
    const redis = c
    const isOnline = await redis.get(`presence:${p.user}`)
    const presence = isOnline ? JSON.parse(isOnline) : null
    return presence?.status === 'online' && presence?.activeConnections > 0
  },

  // seed 002 "Get Online Users from List".
  async svcOnlineUsers (c, p) {
    const redis = c
    const userIds = p.userIds
    if (c.kind === 'ioredis6') {
      // seed 002 Example Usage, literal
      const pipeline = redis.pipeline()
      userIds.forEach(id => pipeline.get(`presence:${id}`))
      const results = await pipeline.exec()
      const onlineUsers = results
        .map(([err, result], index) => {
          if (!err && result) {
            const presence = JSON.parse(result)
            return presence.status === 'online' ? userIds[index] : null
          }
          return null
        })
        .filter(Boolean)
      return onlineUsers
    }
    // seed 002 Example Usage, adapted to node-redis (no pipeline():
    // multi().execAsPipeline(), whose results are the replies themselves)
    const pipeline = redis.multi()
    userIds.forEach(id => pipeline.get(`presence:${id}`))
    const results = await pipeline.execAsPipeline()
    return results
      .map((result, index) => {
        if (result) {
          const presence = JSON.parse(result)
          return presence.status === 'online' ? userIds[index] : null
        }
        return null
      })
      .filter(Boolean)
  },

  // seed 002 "Handle Multiple Devices".
  async svcDeviceTypes (c, p) {
    const redis = c
    const userId = p.user
    // seed 002 Example Usage, literal; node-redis spells hgetall hGetAll
    const connections = c.kind === 'ioredis6'
      ? await redis.hgetall(`connections:${userId}`)
      : await redis.hGetAll(`connections:${userId}`)
    const deviceTypes = Object.values(connections)
      .map(conn => JSON.parse(conn).metadata.device)
      .filter((device, index, arr) => arr.indexOf(device) === index)
    return deviceTypes.sort()
  },

  // seed 004 §1: set user online.
  async chatOnline (c, p) {
    const redis = c
    const userId = p.user
    // seed 004 §1, literal
    await redis.setex(
      `presence:${userId}`,
      300,
      JSON.stringify({ userId, status: 'online', lastSeen: Date.now() })
    )
  },

  // seed 004 §1: check status.
  async chatStatus (c, p) {
    const redis = c
    const userId = p.user
    // seed 004 §1, literal
    const data = await redis.get(`presence:${userId}`)
    const status = data ? 'online' : 'offline'
    return status
  },

  // seed 004 §1: manual cleanup (on disconnect).
  async chatOffline (c, p) {
    const redis = c
    const userId = p.user
    // seed 004 §1, literal
    await redis.del(`presence:${userId}`)
  },

  // seed 004 §2: start typing.
  async typingStart (c, p) {
    const redis = c
    const { conversationId, userId, username } = p
    // seed 004 §2, literal
    await redis.setex(
      `typing:${conversationId}:${userId}`,
      3,
      JSON.stringify({ userId, username, timestamp: Date.now() })
    )
  },

  // seed 004 §2: stop typing.
  async typingStop (c, p) {
    const redis = c
    const { conversationId, userId } = p
    // seed 004 §2, literal
    await redis.del(`typing:${conversationId}:${userId}`)
  },

  // seed 004 §2: get all typing users in a conversation.
  async typingUsers (c, p) {
    const redis = c
    const { conversationId } = p
    // seed 004 §2, literal
    const keys = await redis.keys(`typing:${conversationId}:*`)
    if (keys.length === 0) return [] // redis.mget() with no key is an error
    const values = await redis.mget(...keys)
    // Parse values to get array of typing users
    return values.filter(Boolean).map(v => JSON.parse(v)).sort((a, b) => a.userId < b.userId ? -1 : 1)
  },

  // seed 004 "Monitoring": redis-cli KEYS "typing:*" | wc -l.
  async typingKeyCount (c) {
    // seed 004 Monitoring, literal (the KEYS of the redis-cli line)
    return (await cmd(c, 'KEYS', 'typing:*')).length
  }
}
