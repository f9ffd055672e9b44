// The store's disk fills up: every page says ingest is failing and why, charts keep answering,
// and when space returns ingest resumes by itself and the warning goes. A real tmpfs, as root.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { authedFetch, repoRoot, setupProblem, signIn, startLoupe, until } from './server.mjs'

function needsRoot() {
  if (process.getuid?.() === 0) return null
  const why = 'needs root to mount a small tmpfs under the data directory'
  if (process.env.CI === 'true') throw new Error(`CI: ${why}`)
  return why
}

const skip = setupProblem() ?? needsRoot()
if (skip) it(`end-to-end disk full (skipped: ${skip})`, { skip }, () => {})

describe('a full disk in Chromium', { skip: skip ?? false }, () => {
  let server
  let browser
  let page
  let logDir
  const mount = (...args) => execFileSync('mount', args, { stdio: 'pipe' })

  before(async () => {
    server = await startLoupe({
      backfill: 0,
      ready: async () => true,
      // No agent of its own: only this test's frames, so a small append that still fits in a
      // reused log segment cannot succeed in between and clear the failure before it is seen.
      extraArgs: ['--no-local-agent'],
      // The ingest log (what each acknowledgement waits for) on its own small tmpfs.
      prepare: (dataDir) => {
        logDir = join(dataDir, 'loupe.duckdb.ingest')
        mkdirSync(logDir)
        mount('-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', logDir)
      },
    })
    const { launch, newPage } = await import('./browser.mjs')
    browser = await launch()
    // The agent's refused posts are logged by the server, not the page; the page must log nothing.
    page = await newPage(browser, { width: 1280, height: 800 }, [])
    await signIn(page, server)
  })
  after(async () => {
    await browser?.close().catch(() => {})
    if (logDir) execFileSync('umount', ['-l', logDir], { stdio: 'ignore' }) // before the data dir is removed
    await server?.stop()
  })

  /** Something else fills the disk: write until there is no space left. */
  function fill() {
    const fd = openSync(join(logDir, 'filler'), 'w')
    const chunk = Buffer.alloc(64 << 10, 1)
    try {
      for (;;) writeSync(fd, chunk)
    } catch (e) {
      if (e.code !== 'ENOSPC') throw e
    } finally {
      closeSync(fd)
    }
  }

  it('warns on every page while ingest fails, keeps charts working, and clears when space returns', async () => {
    await page.goto(server.base + '/status')
    fill()
    const token = readFileSync(join(server.dataDir, 'ingest.token'), 'utf8').trim()
    const now = Math.floor(Date.now() / 1000)
    const rows = Array.from({ length: 2000 }, (_, i) => ({ dims: { client: `10.0.${i >> 8}.${i & 255}`, op: 'read' }, count: 1, bytes: 4096 }))
    const send = () =>
      fetch(`${server.base}/api/v1/ingest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ frames: [{ source: 'full@e2e', seq: 1, ts: now - 5, family: 'nfs', host: 'e2e', rows }] }),
      })
    assert.equal((await send()).status, 503)
    const banner = page.getByTestId('ingest-error')
    await banner.waitFor({ timeout: 60_000 })
    assert.match(await banner.textContent(), /Ingest is failing since .*No space left on device/)
    await page.getByTestId('nav-runs').click()
    await banner.waitFor() // on another page too
    const q = await authedFetch(`${server.base}/api/v1/query?metric=nfs.ops&start=-5m&end=now`)
    assert.equal(q.status, 200)
    // (the gauge may flap meanwhile: an append that fits in a reused log segment needs no new space)
    const failures = (await (await authedFetch(`${server.base}/metrics`)).text()).match(/^loupe_ingest_failures_total (\S+)$/m)
    assert.ok(failures && Number(failures[1]) >= 1, String(failures))
    await page.screenshot({ path: join(repoRoot, 'tests/artifacts/e2e/disk-full.png'), fullPage: true })

    rmSync(join(logDir, 'filler'))
    const again = await send()
    assert.equal(again.status, 200)
    assert.equal((await again.json()).accepted, 1)
    await banner.waitFor({ state: 'detached', timeout: 30_000 })
    await until('/metrics to clear', async () => /loupe_ingest_failing 0\.0/.test(await (await authedFetch(`${server.base}/metrics`)).text()))
  })
})
