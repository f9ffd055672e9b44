// Why is this client slow, end to end: from a client in a drill-down to its verdict page, with
// the demo NAS's traffic, and from a reason to the chart behind it.
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { launch, newPage } from './browser.mjs'
import { repoRoot, setupProblem, startLoupe, until } from './server.mjs'

const shots = join(repoRoot, 'tests/artifacts/e2e')
const skip = setupProblem()
if (skip) it(`end-to-end client diagnosis (skipped: ${skip})`, { skip }, () => {})

describe('Loupe client diagnosis in Chromium', { skip: skip ?? false }, () => {
  let server
  let browser
  let page
  const consoleErrors = []

  before(async () => {
    mkdirSync(shots, { recursive: true })
    server = await startLoupe({
      backfill: 0,
      readyWhat: 'a minute of demo NFS traffic',
      ready: async (base) => {
        const q = await (await fetch(`${base}/api/v1/query?metric=nfs.ops&start=-20s&end=-2s`)).json()
        return q.total.filter((v) => v > 0).length >= 10
      },
    })
    browser = await launch()
    page = await newPage(browser, { width: 1280, height: 900 }, consoleErrors)
  })

  after(async () => {
    await browser?.close().catch(() => {})
    await server?.stop()
  })

  const shot = (name) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true })

  it('opens a client\'s verdict from the drill-down and a reason\'s chart from the verdict', async () => {
    await page.goto(`${server.base}/?range=1m&s=nfs.ops;by:client`)
    const card = page.locator('[data-testid="legend-row"]').first()
    await card.waitFor()
    const client = (await card.getAttribute('data-key')).trim()
    await card.click()
    await page.getByTestId('drill-menu').waitFor()
    await page.getByTestId('drill-diagnose').click()
    await page.getByTestId('client-page').waitFor()
    assert.match(page.url(), new RegExp(`/clients\\?client=${client.replaceAll('.', '\\.')}&range=1m$`))
    assert.equal(await page.getByTestId('client-name').textContent(), client)
    const verdict = page.getByTestId('client-verdict')
    await verdict.waitFor()
    const kind = await verdict.getAttribute('data-verdict')
    assert.ok(['network-bound', 'client-bound', 'server-latency-bound', 'healthy'].includes(kind), kind)
    // the facts agree with the API's, and every reason has a chart
    const api = await (await fetch(`${server.base}/api/v1/clients/${client}/diagnosis?start=-1m&end=-2s`)).json()
    assert.equal(api.verdict, kind)
    assert.ok((await page.getByTestId('client-reason').count()) >= 1)
    assert.ok((await page.getByTestId('client-op').count()) >= 1)
    await shot('client-verdict')
    await page.getByTestId('reason-chart').first().click()
    await until('the evidence chart', async () => new URL(page.url()).pathname === '/')
    assert.match(decodeURIComponent(page.url()), new RegExp(`${api.reasons[0].statistic.metric.replace('.', '\\.')}`))
    await page.locator('[data-testid="timeseries-chart"], [data-testid="heatmap-chart"]').first().waitFor()
    // an address that sent nothing is idle, and says so
    await page.goto(`${server.base}/clients?client=192.0.2.1`)
    await until('idle verdict', async () => (await page.getByTestId('client-verdict').getAttribute('data-verdict')) === 'idle')
    assert.deepEqual(consoleErrors, [])
  })
})
