// An admin makes an alert from a chart's bell on the demo NAS's load: it fires within seconds, a
// webhook receiver on loopback gets exactly one post, the chart marks the open alert, and changing
// the rule clears it with a second post. The log shows each event and its webhook attempts.
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { describe, it } from 'node:test'
import { authedFetch, demoInBrowser, setupProblem, until } from './server.mjs'

const skip = setupProblem()
if (skip) it(`end-to-end alerts (skipped: ${skip})`, { skip }, () => {})

/** A webhook receiver on a free loopback port: every POST's JSON body, in order. */
async function receiver() {
  const posts = []
  const srv = createServer((req, res) => {
    let body = ''
    req.on('data', (c) => (body += c))
    req.on('end', () => {
      posts.push({ headers: req.headers, body: JSON.parse(body) })
      res.writeHead(204).end()
    })
  })
  await new Promise((r) => srv.listen(0, '127.0.0.1', r))
  return { posts, url: `http://127.0.0.1:${srv.address().port}/hook`, close: () => new Promise((r) => srv.close(r)) }
}

describe('Loupe alerts in Chromium', { skip: skip ?? false }, () => {
  const t = demoInBrowser({ backfill: 60 })

  it('fires from a chart, posts to a webhook, marks the chart and clears when changed', async () => {
    const { page, server } = t
    const rx = await receiver()
    try {
      await page.goto(`${server.base}/?s=nfs.ops`)
      await page.getByTestId('alert-on-chart').click()
      const form = page.getByTestId('alert-form')
      await form.waitFor()
      assert.equal(await page.getByTestId('alert-metric').inputValue(), 'nfs.ops')
      // the form names what it needs before it sends anything
      await page.getByTestId('alert-save').click()
      assert.equal(await page.getByTestId('alert-form-problem').textContent(), 'threshold must be a number')
      await page.getByTestId('alert-name').fill('demo busy')
      await page.getByTestId('alert-threshold').fill('1') // the demo NAS always does more than 1 op/s
      await page.getByTestId('alert-hold').fill('2')
      await page.getByRole('combobox', { name: 'unit of hold time' }).selectOption('s')
      await page.getByTestId('alert-webhook').fill(rx.url)
      await page.getByTestId('alert-secret').fill('hush')
      await page.getByTestId('alert-save').click()
      await form.waitFor({ state: 'detached' })
      const row = page.locator('[data-testid="alert-rule"][data-name="demo busy"]')
      assert.match(await row.textContent(), /above 1 ops\/s for 2 s; clears after 1 min/)
      await until('the alert to open', async () => (await row.getAttribute('data-active')) === 'true', 20_000)
      assert.match(await page.getByTestId('alert-open').textContent(), /^open since /)
      assert.equal(await page.getByTestId('nav-alerts-open').textContent(), '1')
      const fired = page.locator('[data-testid="event"][data-kind="alert.fired"]')
      await fired.first().waitFor()
      await until('the fired post delivered', async () => (await fired.first().getByTestId('event-delivery').getAttribute('data-delivery')) === 'delivered')
      assert.equal(rx.posts.length, 1)
      const post = rx.posts[0]
      assert.equal(post.body.kind, 'alert.fired')
      assert.equal(post.body.alert.name, 'demo busy')
      assert.ok(post.body.value > 1, JSON.stringify(post.body))
      assert.match(post.headers['x-loupe-signature'], /^sha256=[0-9a-f]{64}$/)
      // its webhook attempts, one click away
      await fired.first().getByRole('button', { name: /webhook attempts of event/ }).click()
      assert.match(await page.getByTestId('deliveries').textContent(), /attempt 1 at .* to http:\/\/127\.0\.0\.1:\d+\/hook: HTTP 204/)
      await t.shot('alerts-open')

      // the worksheet's chart marks the open alert
      await page.getByTestId('nav-worksheet').click()
      const chart = page.locator('[data-testid="chart-card"] [role="img"]').first()
      await until('the alert marked on the chart', async () => /alerts marked: alert: demo busy \(open\)/.test(await chart.getAttribute('aria-label')))
      await t.shot('alerts-chart-annotation')

      // changing the rule clears the open alert, and the receiver is told
      await page.getByTestId('nav-alerts').click()
      await row.getByTestId('alert-edit').click()
      assert.equal(await page.getByTestId('alert-threshold').inputValue(), '1')
      await page.getByTestId('alert-threshold').fill('1000000000')
      await page.getByTestId('alert-save').click()
      await until('the alert to clear', async () => (await row.getAttribute('data-active')) === 'false')
      await until('the cleared post', async () => rx.posts.length >= 2)
      await new Promise((r) => setTimeout(r, 4000)) // and nothing after it: no new firing at a billion ops/s
      assert.deepEqual(rx.posts.map((p) => p.body.kind), ['alert.fired', 'alert.cleared'])
      assert.match(rx.posts[1].body.message, /cleared: the rule was changed/)
      assert.equal(await page.getByTestId('nav-alerts-open').count(), 0)
      const log = await (await authedFetch(`${server.base}/api/v1/events?kind=alert.fired&kind=alert.cleared`)).json()
      assert.deepEqual(log.events.map((e) => e.kind), ['alert.cleared', 'alert.fired'])
      assert.equal(log.events[1].until, log.events[0].at)
      // the demo agents connected and are in the log too
      assert.ok((await page.locator('[data-testid="event"][data-kind="agent.connected"]').count()) >= 1)
      await t.shot('alerts-cleared')
      // the status page lists them under recent alerts
      await page.getByTestId('nav-status').click()
      const recent = page.getByTestId('status-alerts')
      await until('recent alerts on the status page', async () => (await recent.locator('[data-testid="event"]').count()) === 2)
      assert.deepEqual(await recent.locator('[data-testid="event"]').evaluateAll((rows) => rows.map((r) => r.dataset.kind)), ['alert.cleared', 'alert.fired'])
      assert.deepEqual(t.consoleErrors, [])
    } finally {
      await rx.close()
    }
  })
})
