// Start the real Loupe backend (with its demo NAS) for a test, and always stop it by PID.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { after, before } from 'node:test'
import { browserMissing } from './browser.mjs'

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
export const loupeBin = process.env.LOUPE_BIN || join(repoRoot, '.venv/bin/loupe')
export const uiIndex = join(repoRoot, 'backend/loupe/static/index.html')

export function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer()
    srv.unref()
    srv.on('error', fail)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address()
      srv.close(() => ok(port))
    })
  })
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** Poll fn until it returns a truthy value; throw with `what` after `ms`. */
export async function until(what, fn, ms = 30_000, every = 250) {
  const end = Date.now() + ms
  let last
  while (Date.now() < end) {
    try {
      const v = await fn()
      if (v) return v
    } catch (e) {
      last = e
    }
    await sleep(every)
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? `: ${last.message}` : ''}`)
}

/** The admin password every test server starts with (LOUPE_ADMIN_PASSWORD on first start). */
export const ADMIN_PASSWORD = 'e2e-admin-password'

// Per server origin: the operator token it keeps for programs on its machine (DATA_DIR/cli.token).
const apiTokens = new Map()

/** fetch() as a script on the server's machine would: with its api token, unless the call brings its own. */
export function authedFetch(url, init = {}) {
  const token = apiTokens.get(new URL(url).origin)
  const headers = new Headers(init.headers)
  if (token && !headers.has('authorization')) headers.set('authorization', `Bearer ${token}`)
  return fetch(url, { ...init, headers })
}

/** Sign the page's browser context in (the session cookie is shared with every page of it). */
export async function signIn(page, server, user = 'admin', password = ADMIN_PASSWORD) {
  const r = await page.request.post(`${server.base}/api/v1/auth/login`, { data: { user, password } })
  if (!r.ok()) throw new Error(`sign-in as ${user}: ${r.status()} ${await r.text()}`)
  return r.json()
}

/** The default readiness: the demo backfills oldest first; wait until it has caught up with the last minute. */
async function demoTrafficLastMinute(base) {
  const r = await authedFetch(`${base}/api/v1/query?metric=nfs.ops&start=-1m&end=now`)
  const q = await r.json()
  return r.ok && q.total.filter((v) => v > 0).length >= 50
}

/**
 * Run `loupe serve --demo` on a free port with a fresh data dir. Resolves once
 * /healthz answers and `ready(base)` holds: by default, the demo NAS has filled
 * the last minute with NFS traffic.
 */
export async function startLoupe({
  backfill = 90,
  ready = demoTrafficLastMinute,
  readyWhat = 'demo NFS traffic in the last minute',
  readyMs = 60_000,
  prepare = null, // (dataDir) => void: runs before the server starts, e.g. to mount something in it
  extraArgs = [], // more `loupe serve` flags
  env: extraEnv = () => ({}), // (base) => more environment, e.g. LOUPE_PUBLIC_URL: base
} = {}) {
  const port = await freePort()
  const dataDir = mkdtempSync(join(tmpdir(), 'loupe-e2e-'))
  prepare?.(dataDir)
  const base = `http://127.0.0.1:${port}`
  const args = ['serve', '--demo', '--port', String(port), '--data-dir', dataDir, '--demo-backfill', String(backfill), ...extraArgs]
  const env = { ...process.env, LOUPE_ADMIN_PASSWORD: ADMIN_PASSWORD, ...extraEnv(base) }
  const proc = spawn(loupeBin, args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'], env })
  let log = ''
  const keep = (b) => {
    log = (log + b.toString()).slice(-20_000)
  }
  proc.stdout.on('data', keep)
  proc.stderr.on('data', keep)
  let exited = null
  proc.on('exit', (code, signal) => {
    exited = { code, signal }
  })
  // If the test process dies first, do not leave the server behind.
  const onExit = () => {
    if (exited === null) {
      try {
        process.kill(proc.pid, 'SIGKILL')
      } catch {}
    }
  }
  process.on('exit', onExit)

  const server = {
    base,
    pid: proc.pid,
    dataDir,
    log: () => log,
    async stop() {
      process.off('exit', onExit)
      if (exited === null) {
        process.kill(proc.pid, 'SIGTERM')
        const gone = await until('loupe to exit', () => exited !== null, 8_000, 100).catch(() => false)
        if (!gone && exited === null) {
          process.kill(proc.pid, 'SIGKILL')
          await until('loupe to exit after SIGKILL', () => exited !== null, 3_000, 100).catch(() => {})
        }
      }
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
  try {
    await until(
      `${base}/healthz`,
      async () => {
        if (exited !== null) throw new Error(`loupe exited (${JSON.stringify(exited)}):\n${log}`)
        return (await fetch(`${base}/healthz`)).ok
      },
      30_000,
    )
    apiTokens.set(base, readFileSync(join(dataDir, 'cli.token'), 'utf8').trim())
    await until(
      readyWhat,
      async () => {
        if (exited !== null) throw new Error(`loupe exited (${JSON.stringify(exited)}):\n${log}`)
        return ready(base)
      },
      readyMs,
      500,
    )
  } catch (e) {
    await server.stop()
    throw e
  }
  return server
}


/** Why the e2e tests cannot run here (a reason to skip), or null; throws when the
 * repo is not built (those are failures, not skips). */
export function setupProblem() {
  const missing = browserMissing()
  if (missing) return missing
  const problems = []
  if (!existsSync(loupeBin)) problems.push(`${loupeBin} is missing (make deps, or set LOUPE_BIN)`)
  if (!existsSync(uiIndex)) problems.push(`${uiIndex} is missing (make ui)`)
  if (problems.length) throw new Error(problems.join('; '))
  return null
}

/**
 * Inside a describe(): before it, a `loupe serve --demo` (startLoupe(options)) and a Chromium
 * page; after it, both stopped. The returned object fills in: server, page, consoleErrors, shot(name).
 */
export function demoInBrowser(options, viewport = { width: 1280, height: 900 }) {
  const ctx = { server: null, browser: null, page: null, consoleErrors: [] }
  ctx.shot = (name) => ctx.page.screenshot({ path: join(repoRoot, 'tests/artifacts/e2e', `${name}.png`), fullPage: true })
  before(async () => {
    mkdirSync(join(repoRoot, 'tests/artifacts/e2e'), { recursive: true })
    ctx.server = await startLoupe(options)
    const { launch, newPage } = await import('./browser.mjs')
    ctx.browser = await launch()
    ctx.page = await newPage(ctx.browser, viewport, ctx.consoleErrors)
    await signIn(ctx.page, ctx.server)
  })
  after(async () => {
    await ctx.browser?.close().catch(() => {})
    await ctx.server?.stop()
  })
  return ctx
}
