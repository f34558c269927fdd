// Seed 004 §3 (the chat app's cron last-run key), ioredis 6.
'use strict'

module.exports = {
  // The chat app's unread reminder: runs unless it ran within two hours.
  // Returns 'skipped', or 'ran' and the time it wrote.
  async unreadReminder (c) {
    const redis = c
    // seed 004 §3, literal
    const CRON_KEY = 'cron:last-run:unread-reminder'
    const TWO_HOURS = 2 * 60 * 60 * 1000

    // Check last run
    const lastRun = await redis.get(CRON_KEY)
    const now = Date.now()

    if (lastRun) {
      const timeSinceLastRun = now - parseInt(lastRun, 10)
      if (timeSinceLastRun < TWO_HOURS) {
        // Skip execution
        return { ran: false, lastRun }
      }
    }

    // Execute job...

    // Update last run
    await redis.set(CRON_KEY, now.toString())
    return { ran: true, lastRun: now.toString() }
  }
}
