#!/usr/bin/env node
// The interop tier's runner: runs one function of one flow file with one
// Node Redis client, as the Go side (internal/cmd/interop) asks.
//
//   REDIS_URL=redis://127.0.0.1:6379/15 node interop/run.js <client> <area> <fn> '<params json>'
//
// <client> is redis4 (node-redis 4), redis6 (node-redis 6) or ioredis6
// (ioredis 6); <area> names interop/flows/<area>.js; <fn> is one of its
// exported async functions, called as fn(c, p) with c the connected client
// (c.kind names it) and p the parsed params. The function's result is
// printed as one JSON line on stdout (null for none). On any error the
// runner prints it on stderr and exits 1.
//
//   REDIS_URL=... node interop/run.js --serve <client>
//
// is the same with one client for many calls, so that the tier starts
// Node once per client instead of once per call: each line on stdin is
// {"area","fn","params"}, answered in order by one line on stdout,
// {"result": ...} or {"error": "..."}; it exits when stdin closes.
'use strict'

const path = require('path')
const readline = require('readline')

const CLIENTS = {
  // node-redis: createClient({ url }), then connect().
  async redis4 (url) {
    const c = require('redis4').createClient({ url })
    c.on('error', () => {}) // a failed command rejects its promise; nothing else to report
    await c.connect()
    return { c, close: () => c.quit() }
  },
  async redis6 (url) {
    const c = require('redis6').createClient({ url })
    c.on('error', () => {})
    await c.connect()
    return { c, close: () => c.quit() }
  },
  // ioredis: new Redis(url), which connects on its own; no retries here,
  // so a broken flow fails at once.
  async ioredis6 (url) {
    const Redis = require('ioredis6')
    const c = new Redis(url, { maxRetriesPerRequest: 0, lazyConnect: true, retryStrategy: () => null })
    c.on('error', () => {})
    await c.connect()
    return { c, close: () => c.quit() }
  }
}

// connect opens a client of kind on REDIS_URL.
async function connect (kind) {
  const open = CLIENTS[kind]
  if (!open) throw new Error(`unknown client ${JSON.stringify(kind)} (redis4, redis6, ioredis6)`)
  const url = process.env.REDIS_URL
  if (!url) throw new Error('REDIS_URL is not set')
  const client = await open(url)
  client.c.kind = kind
  return client
}

// call runs area's fn with c and the params; undefined becomes null.
async function call (c, area, fn, params) {
  if (!/^[a-z][a-z0-9_]*$/.test(area)) throw new Error(`bad area ${JSON.stringify(area)}`)
  const flows = require(path.join(__dirname, 'flows', area + '.js'))
  if (typeof flows[fn] !== 'function') throw new Error(`flows/${area}.js exports no function ${fn}`)
  const out = await flows[fn](c, params || {})
  return out === undefined ? null : out
}

async function serve (kind) {
  const { c, close } = await connect(kind)
  try {
    for await (const line of readline.createInterface({ input: process.stdin, crlfDelay: Infinity })) {
      let reply
      try {
        const req = JSON.parse(line)
        reply = { result: await call(c, req.area, req.fn, req.params) }
      } catch (err) {
        reply = { error: err && err.stack ? err.stack : String(err) }
      }
      process.stdout.write(JSON.stringify(reply) + '\n')
    }
  } finally {
    await close()
  }
}

async function main (argv) {
  if (argv[0] === '--serve' && argv.length === 2) return serve(argv[1])
  if (argv.length < 3 || argv.length > 4) {
    throw new Error('usage: node run.js <client> <area> <fn> [<params json>] | node run.js --serve <client>')
  }
  const [kind, area, fn, params] = argv
  const p = params ? JSON.parse(params) : {}
  const { c, close } = await connect(kind)
  try {
    process.stdout.write(JSON.stringify(await call(c, area, fn, p)) + '\n')
  } finally {
    await close()
  }
}

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (err) => {
    process.stderr.write((err && err.stack ? err.stack : String(err)) + '\n')
    process.exit(1)
  }
)
