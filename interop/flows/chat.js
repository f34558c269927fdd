// Seed 000 §5 (the home-automation backend's support chat), node-redis 4
// and 6: the seed's "Admin chat management examples", with the admin and
// conversation IDs from p.
'use strict'

// seed runs one of the seed's snippets; a TypeError the client throws
// while building the command (the seed's positional zAdd) is returned, not
// thrown, so that the flow can report it and run the seed's intent.
async function seed (fn) {
  try {
    await fn()
    return null
  } catch (err) {
    if (err instanceof TypeError) return err.message
    throw err
  }
}

module.exports = {
  // The backend assigns conversation p.conv to admin p.admin, queues it
  // as unread, caches a message and writes the admin's dashboard. Returns
  // the errors of the literal snippets (null: ran), each followed by the
  // seed's intent in node-redis's form where the literal one throws.
  async assign (c, p) {
    const client = c
    const errors = {}
    // Assign conversation to admin
    errors.assign = await seed(async () => {
      // seed 000 §5, literal
      await client.multi()
        .sAdd(`ha:admin:${p.admin}:assignments`, p.conv)
        .zAdd('ha:chat:conversations:active', Date.now(), p.conv)
        .expire(`ha:admin:${p.admin}:assignments`, 3600)
        .exec()
    })
    if (errors.assign) {
      // seed 000 §5, adapted: node-redis's zAdd takes { score, value }
      await client.multi()
        .sAdd(`ha:admin:${p.admin}:assignments`, p.conv)
        .zAdd('ha:chat:conversations:active', { score: Date.now(), value: p.conv })
        .expire(`ha:admin:${p.admin}:assignments`, 3600)
        .exec()
    }

    // Add conversation to unread queue with priority
    errors.unread = await seed(async () => {
      // seed 000 §5, literal
      const priorityScore = 100 + Date.now() // High priority
      await client.zAdd('ha:chat:conversations:unread', priorityScore, p.conv)
    })
    if (errors.unread) {
      // seed 000 §5, adapted: node-redis's zAdd takes { score, value }
      const priorityScore = 100 + Date.now() // High priority
      await client.zAdd('ha:chat:conversations:unread', { score: priorityScore, value: p.conv })
    }

    // Cache recent messages for conversation
    // seed 000 §5, literal
    const messageData = JSON.stringify({
      id: 789,
      content: 'Hello, how can I help?',
      sender_role: 'admin',
      timestamp: new Date().toISOString()
    })
    await client.multi()
      .lPush(`ha:chat:conversation:${p.conv}:messages`, messageData)
      .lTrim(`ha:chat:conversation:${p.conv}:messages`, 0, 99) // Keep last 100
      .expire(`ha:chat:conversation:${p.conv}:messages`, 3600)
      .exec()

    // Update admin dashboard cache
    // seed 000 §5, literal
    await client.multi()
      .hSet(`ha:chat:admin:dashboard:${p.admin}`, {
        'total_active': '45',
        'assigned_to_me': '12',
        'unread_count': '5',
        'avg_response_time': '4.2'
      })
      .expire(`ha:chat:admin:dashboard:${p.admin}`, 300)
      .exec()
    return errors
  },

  // The backend caches one message of its own for conversation p.conv.
  async cacheMessage (c, p) {
    const client = c
    // seed 000 §5, literal
    const messageData = JSON.stringify({
      id: 789,
      content: 'Hello, how can I help?',
      sender_role: 'admin',
      timestamp: new Date().toISOString()
    })
    await client.multi()
      .lPush(`ha:chat:conversation:${p.conv}:messages`, messageData)
      .lTrim(`ha:chat:conversation:${p.conv}:messages`, 0, 99) // Keep last 100
      .expire(`ha:chat:conversation:${p.conv}:messages`, 3600)
      .exec()
  },

  // The backend's reads of what the library wrote: the layout's own
  // examples (SCARD, GET, ZREVRANGE, LRANGE, HGETALL).
  async read (c, p) {
    const client = c
    // seed 000 §5, literal: the admin's workload
    const assignments = await client.sCard(`ha:admin:${p.admin}:assignments`)
    const isOnline = await client.get(`ha:admin:${p.admin}:presence`)
    // seed 000 §5 key table examples: ZREVRANGE ... 0 9, ZREVRANGE ... 0 -1,
    // LRANGE ... 0 19, HGETALL
    const assigned = await client.sIsMember(`ha:admin:${p.admin}:assignments`, p.conv)
    const active = await client.zRange('ha:chat:conversations:active', 0, 9, { REV: true })
    const unread = await client.zRange('ha:chat:conversations:unread', 0, -1, { REV: true })
    const messages = (await client.lRange(`ha:chat:conversation:${p.conv}:messages`, 0, 19)).map(m => JSON.parse(m))
    const dashboard = await client.hGetAll(`ha:chat:admin:dashboard:${p.admin}`)
    return { assignments, isOnline, assigned: Boolean(assigned), active, unread, messages, dashboard }
  }
}
