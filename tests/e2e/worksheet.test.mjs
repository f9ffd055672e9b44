// The worksheet end to end: add a statistic, watch it update, drill down to files,
// open a latency heat map, list the members of a band, save, and reload the URL.
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { launch, newPage } from './browser.mjs'
import { authedFetch, repoRoot, setupProblem, signIn, startLoupe, until } from './server.mjs'

const shots = join(repoRoot, 'tests/artifacts/e2e')

const skip = setupProblem()

if (skip) it(`end-to-end worksheet (skipped: ${skip})`, { skip }, () => {})

describe('Loupe worksheet in Chromium', { skip: skip ?? false }, () => {
  let server
  let browser
  let page
  const consoleErrors = []

  before(async () => {
    mkdirSync(shots, { recursive: true })
    server = await startLoupe()
    browser = await launch()
    page = await newPage(browser, { width: 1280, height: 800 }, consoleErrors)
    await signIn(page, server)
  })

  after(async () => {
    await browser?.close().catch(() => {})
    await server?.stop()
  })

  const shot = (name) => page.screenshot({ path: join(shots, `${name}.png`) })
  const card = (title) => page.locator('[data-testid="chart-card"]').filter({ has: page.locator('[data-testid="chart-title"]', { hasText: title }) })
  const titles = () => page.locator('[data-testid="chart-title"]').allTextContents()

  it('opens an empty worksheet with the demo labelled', async () => {
    await page.goto(server.base + '/')
    await page.getByTestId('worksheet-empty').waitFor()
    await page.getByTestId('demo-label').waitFor()
    assert.match(await page.getByTestId('demo-label').textContent(), /demo data/)
  })

  it('adds NFS operations by client and updates it live', async () => {
    await page.getByTestId('add-statistic-button').click()
    await page.getByTestId('add-metric').selectOption('nfs.ops')
    await page.getByTestId('add-by').selectOption('client')
    await page.getByTestId('add-submit').click()
    const c = card('NFS operations per second broken down by client')
    await c.locator('[data-testid="legend-row"]').first().waitFor()
    assert.ok((await c.locator('[data-testid="legend-row"]').count()) >= 3, 'several clients in the legend')
    assert.match(page.url(), /s=nfs\.ops;by:client/)

    const snapshot = async () => ({
      ts: await c.getByTestId('last-ts').textContent(),
      values: (await c.locator('[data-testid="legend-last"]').allTextContents()).join('|'),
    })
    const first = await snapshot()
    const later = await until('the chart to move on', async () => {
      const s = await snapshot()
      return s.ts !== first.ts && s.values !== first.values ? s : null
    }, 8_000, 500)
    assert.notEqual(later.ts, first.ts)
    await shot('01-clients')
  })

  it('drills from a client into its files', async () => {
    const c = card('NFS operations per second broken down by client')
    const row = c.locator('[data-testid="legend-row"]').first()
    const client = (await row.getAttribute('data-key')).trim()
    await row.click()
    await page.getByTestId('drill-menu').waitFor()
    await shot('02-drill-menu')
    await page.getByTestId('drill-file').click()
    const files = card(`NFS operations per second for client ${client} broken down by file`)
    await files.locator('[data-testid="legend-row"]').first().waitFor()
    const labels = await files.locator('[data-testid="legend-label"]').allTextContents()
    assert.ok(labels.some((l) => l.startsWith('/')), `file paths in the legend: ${labels.join(', ')}`)
    await shot('03-files')
  })

  it('opens a latency heat map from a file and lists the members of a band', async () => {
    const files = card('broken down by file')
    const fileRow = files.locator('[data-testid="legend-row"]').filter({ hasText: /^\s*\// }).first()
    const file = (await fileRow.getAttribute('data-key')).trim()
    await fileRow.click()
    await page.getByTestId('drill-latency').click()
    const hm = card(`for file ${file} broken down by latency`)
    await hm.getByTestId('heatmap-chart').waitFor()
    await hm.getByTestId('band-form').waitFor()
    await hm.locator('[data-testid="band-rates"] tr').first().waitFor()

    // The busiest bucket of the file, chosen with the accessible selects.
    const rates = await hm.locator('[data-testid="band-rates"] tr').evaluateAll((rows) =>
      rows.map((r) => ({ index: r.dataset.index, rate: Number(r.dataset.rate) })),
    )
    const busiest = rates.reduce((a, b) => (b.rate > a.rate ? b : a))
    await hm.getByTestId('band-lo').selectOption(busiest.index)
    await hm.getByTestId('band-hi').selectOption(busiest.index)
    await hm.getByTestId('band-by').selectOption('op')
    await hm.getByTestId('show-members').click()
    await hm.locator('[data-testid="member-row"]').first().waitFor()
    const membersTitle = await hm.getByTestId('members-title').textContent()
    assert.match(membersTitle, /ops\/s between .* by op/)
    // Who is in the band adds up to the band's rate in the heat map beside it.
    const rate = (text) => Number(text.replace(/,/g, '').match(/[\d.]+/)[0])
    const inBand = rate(await hm.getByTestId('band-sum').textContent())
    const members = rate(membersTitle)
    assert.ok(Math.abs(inBand - members) <= 0.3 * Math.max(inBand, members) + 0.05, `band ${inBand} vs members ${members}`)
    await hm.scrollIntoViewIfNeeded()
    await shot('04-heatmap-members')
  })

  it('saves the worksheet and restores the same charts from the URL', async () => {
    await page.getByTestId('save-button').click()
    await page.getByTestId('save-name').fill('e2e drill-down')
    await page.getByTestId('save-submit').click()
    await until('the saved id in the URL', () => /[?&]ws=/.test(page.url()), 5_000)
    assert.equal(await page.getByTestId('worksheet-name').textContent(), 'e2e drill-down')

    const before = await titles()
    assert.equal(before.length, 3)
    await page.reload()
    await until('the same chart titles', async () => JSON.stringify(await titles()) === JSON.stringify(before), 15_000)
    await page.locator('[data-testid="legend-row"]').first().waitFor()
    await page.evaluate(() => window.scrollTo(0, 0))
    await shot('05-reloaded')

    const saved = await (await authedFetch(`${server.base}/api/v1/worksheets`)).json()
    assert.deepEqual(saved.worksheets.map((w) => w.name), ['e2e drill-down'])
    assert.equal(saved.worksheets[0].statistics.length, 3)
  })

  it('lists saved worksheets with their owner, clones one and deletes the clone', async () => {
    const names = async () => (await (await authedFetch(`${server.base}/api/v1/worksheets`)).json()).worksheets.map((w) => w.name).sort()
    await page.getByTestId('open-button').click()
    const line = page.getByTestId('saved-line').first()
    await line.waitFor()
    assert.equal(await line.getAttribute('data-owner'), 'admin')
    assert.match(await line.textContent(), /3 statistics · by admin/)
    await line.getByTestId('clone-worksheet').click()
    await until('the clone listed', async () => (await page.getByTestId('saved-line').count()) === 2)
    assert.deepEqual(await names(), ['Copy of e2e drill-down', 'e2e drill-down'])
    const copy = page.getByTestId('saved-line').filter({ hasText: 'Copy of e2e drill-down' })
    page.once('dialog', (d) => d.accept())
    await copy.getByTestId('delete-worksheet').click()
    await until('the clone gone', async () => (await page.getByTestId('saved-line').count()) === 1)
    assert.deepEqual(await names(), ['e2e drill-down'])
    await page.keyboard.press('Escape')
  })

  it('shows the status tiles and opens one in the worksheet', async () => {
    await page.getByTestId('nav-status').click()
    await page.getByTestId('tile-nfs_ops').waitFor()
    assert.ok((await page.locator('.tile').count()) >= 5)
    // usage: the store, the free disk, and (this server is minutes old) no growth figure yet
    const st = await (await authedFetch(`${server.base}/api/v1/status`)).json()
    assert.ok(st.disk_free_bytes > 0)
    assert.match(await page.getByTestId('status-usage').textContent(), / · store [\d.,]+ [KMG]?i?B · [\d.,]+ [KMGT]?i?B free · growth known after 10 minutes$/)
    await page.getByTestId('sources-table').waitFor()
    await shot('06-status')
    await page.getByTestId('tile-disk_iops').click()
    await until('the disk chart', async () => (await titles()).some((t) => t.startsWith('disk operations per second')), 10_000)
    assert.equal((await titles()).length, 4)
  })

  it('logged no errors in the page', () => {
    assert.deepEqual(consoleErrors, [])
  })
})
