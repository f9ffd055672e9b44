// The Status page's Activity tiles: eight tiles with a value, a weather level and a sparkline of
// what the young demo store holds; an admin changes a tile's thresholds and statistic, is told
// what is wrong with a bad one, and resets them; a viewer gets no editor and the API refuses them.
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { launch, newPage } from './browser.mjs'
import { repoRoot, setupProblem, signIn, startLoupe, until } from './server.mjs'

const shots = join(repoRoot, 'tests/artifacts/e2e')
const LEVELS = ['Sunny', 'Partly cloudy', 'Cloudy', 'Stormy', 'Hurricane']

const skip = setupProblem()
if (skip) it(`end-to-end status tiles (skipped: ${skip})`, { skip }, () => {})

describe('Loupe status tiles in Chromium', { skip: skip ?? false }, () => {
  let server
  let browser
  let page
  const consoleErrors = []
  // The refused save this test makes on purpose is logged by Chromium as a failed resource.
  const expectedErrors = [/status of 400/]

  before(async () => {
    mkdirSync(shots, { recursive: true })
    server = await startLoupe()
    browser = await launch()
    page = await newPage(browser, { width: 1280, height: 800 }, consoleErrors, expectedErrors)
    await signIn(page, server)
  })

  after(async () => {
    await browser?.close().catch(() => {})
    await server?.stop()
  })

  const shot = (name) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true })
  const api = async (path, init) => {
    const r = await page.request.fetch(server.base + path, init)
    return { status: r.status(), body: await r.json() }
  }
  const tile = (id) => page.getByTestId(`tile-${id}`)
  const form = (id) => page.locator(`[data-testid="tile-form"][data-tile="${id}"]`)

  it('shows eight tiles, each with a value, a named weather level and the span its sparkline covers', async () => {
    await page.goto(server.base + '/status')
    await tile('nfs_ops').getByTestId('tile-weather').waitFor()
    assert.equal(await page.locator('[data-testid="status-tiles"] .tile').count(), 8)
    const titles = await page.locator('[data-testid="status-tiles"] .tile-title').allTextContents()
    assert.deepEqual(titles, ['NFS operations', 'NFS read', 'NFS write', 'Network in', 'Network out', 'Disk IOPS', 'Disk throughput', 'CPU busy'])
    for (const t of await page.locator('[data-testid="status-tiles"] .tile').all()) {
      assert.ok(LEVELS.includes(await t.getByTestId('tile-weather').textContent()))
      assert.match(await t.getByTestId('tile-value').textContent(), /\d/)
      // minutes of demo history fill the sparkline: it says so, not "last 7 days" of nothing
      assert.match(await t.getByTestId('tile-span').textContent(), /^last \d+ (s|min)$/)
    }
    const st = (await api('/api/v1/status')).body
    const nfs = st.tiles.find((t) => t.id === 'nfs_ops')
    assert.ok(nfs.step <= 5 && nfs.values.length >= 15, `a young store's sparkline: ${nfs.step} s steps, ${nfs.values.length} points`)
    // every tile shares the span since the store's oldest second; the demo's 90 s of NFS history fill much of it
    const busy = nfs.values.slice(0, -1).filter((v) => v > 0).length
    assert.ok(busy * nfs.step >= 60 && busy >= nfs.values.length / 3, `the demo traffic across the sparkline: ${busy} of ${nfs.values.length} points`)
    // the weather agrees with the default thresholds for the mean of the last 10 s, and says so
    assert.equal(nfs.level_seconds, 10)
    const level = nfs.thresholds.filter((t) => nfs.level >= t).length
    assert.equal(await tile('nfs_ops').getAttribute('data-weather'), LEVELS[level].toLowerCase())
    assert.match(await tile('nfs_ops').getAttribute('title'), /Weather \(mean of the last 10 s: [\d.,]+[KMG]? ops\/s\): sunny below 1,000 ops\/s; partly cloudy from 1,000 ops\/s; .*hurricane from 50,000 ops\/s/)
    await shot('status-01-tiles')
  })

  it('lets an admin set thresholds that put the demo load in a known level, and says what is wrong with bad ones', async () => {
    await page.getByTestId('edit-tiles').click()
    await page.getByTestId('tiles-editor').waitFor()
    assert.equal(await page.getByTestId('tile-form').count(), 8)
    const f = form('nfs_ops')
    // descending thresholds: refused by the server, which names the tile and field; nothing changes
    for (const [k, v] of [[1, '30'], [2, '20'], [3, '10'], [4, '5']]) await f.getByTestId(`tile-threshold-${k}`).fill(v)
    await page.getByTestId('tiles-save').click()
    const err = page.getByTestId('admin-error')
    await err.waitFor()
    assert.match(await err.textContent(), /tiles\[0\] \(nfs_ops\)\.thresholds: each must be above the one before \(ascending\), but 20 follows 30/)
    assert.deepEqual((await api('/api/v1/status/tiles')).body.tiles[0].thresholds, [1000, 5000, 20000, 50000])
    // the demo serves thousands of NFS operations a second: from 3 up to a billion is "stormy"
    for (const [k, v] of [[1, '1'], [2, '2'], [3, '3'], [4, '1000000000']]) await f.getByTestId(`tile-threshold-${k}`).fill(v)
    // and the disk throughput tile becomes NFS writes, opened by client
    const g = form('disk_bytes')
    await g.getByTestId('tile-metric').selectOption('nfs.ops')
    await g.getByTestId('tile-title-input').fill('NFS writes')
    await g.getByTestId('tile-filters').fill('op=write')
    await g.getByTestId('tile-by').selectOption('client')
    await shot('status-02-editor')
    await page.getByTestId('tiles-save').click()
    await page.getByTestId('tiles-editor').waitFor({ state: 'detached' })
    // the new thresholds first: the demo's load may already be "stormy" under the old ones
    await until('the NFS tile on its new thresholds', async () => /stormy from 3 ops\/s; hurricane from 1G ops\/s/.test(await tile('nfs_ops').getAttribute('title')), 10_000)
    await until('the stormy NFS tile', async () => (await tile('nfs_ops').getAttribute('data-weather')) === 'stormy', 10_000)
    assert.equal(await tile('nfs_ops').getByTestId('tile-weather').textContent(), 'Stormy')
    await until('the NFS writes tile', async () => (await tile('disk_bytes').locator('.tile-title').textContent()) === 'NFS writes', 10_000)
    assert.match(await tile('disk_bytes').getByTestId('tile-value').textContent(), /ops\/s$/)
    await shot('status-03-stormy')
    const cfg = (await api('/api/v1/status/tiles')).body
    assert.equal(cfg.default, false)
    assert.deepEqual(cfg.tiles[0].thresholds, [1, 2, 3, 1e9])
    const { id, metric, title, where, by, unit, scale } = cfg.tiles[6]
    assert.deepEqual({ id, metric, title, where, by, unit, scale }, { id: 'disk_bytes', metric: 'nfs.ops', title: 'NFS writes', where: { op: ['write'] }, by: 'client', unit: 'ops/s', scale: 1 })
    const audit = (await api('/api/v1/audit')).body.entries.filter((e) => e.action === 'status.tiles.set')
    assert.equal(audit.length, 1)
    assert.equal(audit[0].detail, '8 tiles: changed nfs_ops (thresholds); disk_bytes (title, metric, by, where, unit, scale)')
  })

  it('opens a tile’s statistic in the worksheet', async () => {
    await tile('disk_bytes').click()
    const title = page.locator('[data-testid="chart-title"]', { hasText: 'NFS operations per second of type write broken down by client' })
    await title.waitFor()
    assert.match(page.url(), /s=nfs\.ops;by:client/)
  })

  it('shows a viewer the tiles but no editor, and the API refuses the viewer’s change', async () => {
    const made = await api('/api/v1/users', {
      method: 'POST',
      data: { name: 'vera', role: 'viewer', password: 'vera-password' },
      headers: { 'X-CSRF-Token': (await api('/api/v1/auth/me')).body.csrf_token },
    })
    assert.equal(made.status, 201)
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    try {
      const viewer = await context.newPage()
      const me = await signIn(viewer, server, 'vera', 'vera-password')
      await viewer.goto(server.base + '/status')
      await viewer.getByTestId('tile-nfs_ops').getByTestId('tile-weather').waitFor()
      assert.equal(await viewer.getByTestId('tile-nfs_ops').getAttribute('data-weather'), 'stormy')
      assert.equal(await viewer.getByTestId('edit-tiles').count(), 0)
      const tiles = (await (await viewer.request.get(server.base + '/api/v1/status/tiles')).json()).tiles
      const r = await viewer.request.put(server.base + '/api/v1/status/tiles', { data: { tiles }, headers: { 'X-CSRF-Token': me.csrf_token } })
      assert.equal(r.status(), 403)
      assert.match((await r.json()).detail, /needs the admin role; vera is viewer/)
    } finally {
      await context.close()
    }
  })

  it('puts the built-in tiles back', async () => {
    await page.getByTestId('nav-status').click()
    await page.getByTestId('edit-tiles').click()
    page.once('dialog', (d) => d.accept())
    await page.getByTestId('tiles-reset').click()
    await page.getByTestId('tiles-editor').waitFor({ state: 'detached' })
    await until('the built-in disk tile', async () => (await tile('disk_bytes').locator('.tile-title').textContent()) === 'Disk throughput', 10_000)
    assert.match(await tile('nfs_ops').getAttribute('title'), /partly cloudy from 1,000 ops\/s/)
    const cfg = (await api('/api/v1/status/tiles')).body
    assert.equal(cfg.default, true)
    assert.equal(cfg.set_by, 'admin')
  })

  it('logged no errors in the page', () => {
    assert.deepEqual(consoleErrors, [])
  })
})
