// Seed 000 §4 (the home-automation backend's user record), node-redis 4
// and 6: the seed's "Example Usage", with the user ID from p.id.
'use strict'

module.exports = {
  // Create user session on login.
  async login (c, p) {
    // seed 000 §4, literal
    await c.hSet(`ha:user:${p.id}`, {
      device_id: 'iPhone_12_ABC123',
      login_time: Date.now().toString(),
      last_seen: Date.now().toString(),
      active: 'true',
      ip_address: '192.168.1.100'
    })
    await c.expire(`ha:user:${p.id}`, 604800) // 7 days
  },

  // Validate user on API request, then update last seen and refresh the
  // TTL: returns what the backend's handler would.
  async validate (c, p) {
    // seed 000 §4, literal
    const user = await c.hGetAll(`ha:user:${p.id}`)
    if (!user.device_id) {
      return 'Session expired'
    }
    if (user.active !== 'true') {
      return 'User disabled'
    }

    // Update last seen and refresh TTL
    await c.multi()
      .hSet(`ha:user:${p.id}`, 'last_seen', Date.now().toString())
      .expire(`ha:user:${p.id}`, 604800)
      .exec()
    return 'ok'
  },

  // Disable user instantly.
  async disable (c, p) {
    // seed 000 §4, literal
    await c.hSet(`ha:user:${p.id}`, 'active', 'false')
  },

  // Logout user (delete session).
  async logout (c, p) {
    // seed 000 §4, literal
    await c.del(`ha:user:${p.id}`)
  }
}
