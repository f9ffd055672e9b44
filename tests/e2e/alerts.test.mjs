// An admin makes an alert from a chart's bell on the demo NAS's load: it fires within seconds, a
// webhook receiver on loopback gets exactly one post, the chart marks the open alert, and changing
// the rule clears it with a second post. The log shows each event and its webhook attempts.
// Then a per-client rule from a breakdown chart's bell: each client over the threshold fires once,
// shown by its name, with one post per client, and deleting the rule clears each.
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { describe, it } from 'node:test'
import { authedFetch, demoInBrowser, setupProblem, signIn, until } from './server.mjs'

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
  const t = demoInBrowser({ backfill: 60, env: (base) => ({ LOUPE_PUBLIC_URL: base }) })

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

  it('fires per client from a breakdown chart, one post per client, shown by name', async () => {
    const { page, server } = t
    const { csrf_token: csrf } = await signIn(page, server)
    const api = (method, path, data) => page.request.fetch(`${server.base}${path}`, { method, data, headers: { 'X-CSRF-Token': csrf } })
    const nameOf = (address) => `ws-${address.split('.')[3]}.lab`
    const clients = Array.from({ length: 20 }, (_, i) => `10.0.0.${i + 1}`)
    assert.equal((await api('PUT', '/api/v1/client-names', { entries: clients.map((a) => ({ address: a, name: nameOf(a) })) })).status(), 200)
    // a threshold in the widest gap between the busiest clients, so a few cross it and most do not
    const bd = await (await authedFetch(`${server.base}/api/v1/breakdown?metric=nfs.ops&by=client&start=-20s&end=-3s&top=20`)).json()
    const v = bd.rows.map((r) => r.value)
    let k = 2
    for (let i = 2; i <= 8; i++) if (v[i - 1] / v[i] > v[k - 1] / v[k]) k = i
    const threshold = Math.round(Math.sqrt(v[k - 1] * v[k]))
    const surelyAbove = bd.rows.filter((r) => r.value > threshold * 1.25).map((r) => r.key)
    const surelyBelow = bd.rows.filter((r) => r.value < threshold / 1.25).map((r) => r.key)
    assert.ok(surelyAbove.length >= 1 && surelyBelow.length >= 8, JSON.stringify({ threshold, v }))

    const rx = await receiver()
    try {
      await page.goto(`${server.base}/?s=nfs.ops;by:client;top:20`)
      await page.getByTestId('alert-on-chart').click()
      await page.getByTestId('alert-form').waitFor()
      assert.equal(await page.getByTestId('alert-by').inputValue(), 'client') // the chart's breakdown
      assert.match(await page.getByTestId('alert-by-note').textContent(), /each client that crosses the threshold fires, and clears, on its own; the 20 busiest are checked each second, at most 10 open at once/)
      await page.getByTestId('alert-name').fill('busy clients')
      await page.getByTestId('alert-threshold').fill(String(threshold))
      await page.getByTestId('alert-hold').fill('2')
      await page.getByRole('combobox', { name: 'unit of hold time' }).selectOption('s')
      await page.getByTestId('alert-webhook').fill(rx.url)
      await page.getByTestId('alert-save').click()
      await page.getByTestId('alert-form').waitFor({ state: 'detached' })
      const row = page.locator('[data-testid="alert-rule"][data-name="busy clients"]')
      assert.match(await row.textContent(), new RegExp(`any client above ${threshold.toLocaleString('en-US')} ops/s for 2 s`))
      assert.match(await row.getByTestId('alert-bounds').textContent(), /checks the 20 busiest clients each second; at most 10 open at once/)
      const opened = row.getByTestId('alert-open-element')
      await until('the busiest clients open', async () => {
        const open = await opened.evaluateAll((li) => li.map((x) => x.dataset.element))
        return surelyAbove.every((c) => open.includes(c))
      }, 20_000)
      // each open client by its name, its address on hover
      for (const c of surelyAbove) {
        const label = row.locator(`[data-testid="alert-open-element"][data-element="${c}"] .client-named`)
        assert.equal(await label.textContent(), nameOf(c))
        assert.equal(await label.getAttribute('title'), c)
      }
      const { rules } = await (await authedFetch(`${server.base}/api/v1/alerts`)).json()
      const rule = rules.find((r) => r.name === 'busy clients')
      assert.equal(rule.by, 'client')
      const fired = async () => (await (await authedFetch(`${server.base}/api/v1/events?kind=alert.fired&subject=${rule.id}`)).json()).events
      // one fired event per client that crossed, and one post for each
      await until('a post per fired client', async () => {
        const n = (await fired()).length
        return n >= surelyAbove.length && rx.posts.length === n
      })
      await new Promise((r) => setTimeout(r, 3000)) // and no second one for any of them
      const firedNow = await fired()
      const elements = firedNow.map((e) => e.element).sort()
      assert.deepEqual([...new Set(elements)], elements, 'a client fired twice')
      for (const c of surelyAbove) assert.ok(elements.includes(c), `${c} did not fire: ${elements}`)
      for (const c of surelyBelow) assert.ok(!elements.includes(c), `${c} fired below the threshold`)
      assert.deepEqual(rx.posts.map((p) => p.body.kind), firedNow.map(() => 'alert.fired'))
      assert.deepEqual(rx.posts.map((p) => p.body.element.key).sort(), elements)
      assert.ok(rx.posts.every((p) => p.body.element.dimension === 'client' && p.body.alert.by === 'client'))
      // the log names each client
      for (const c of surelyAbove) {
        const ev = page.locator(`[data-testid="event"][data-kind="alert.fired"][data-element="${c}"]`)
        await ev.waitFor()
        const msg = ev.getByTestId('event-message')
        assert.match(await msg.textContent(), new RegExp(`^busy clients: NFS operations per second for client ${nameOf(c).replace('.', '\\.')} above`))
        assert.equal(await msg.locator('.client-named').getAttribute('title'), c)
      }
      await t.shot('alerts-per-client')

      // the chart marks each open client's alert by name
      await page.getByTestId('nav-worksheet').click()
      const chart = page.locator('[data-testid="chart-card"] [role="img"]').first()
      await until('the per-client alerts marked on the chart by name', async () => {
        const label = await chart.getAttribute('aria-label')
        return surelyAbove.every((c) => label.includes(`alert: busy clients: client ${nameOf(c)} (open)`))
      })

      // a post's link opens the Alerts page on its event, and from there the client's statistic
      // over the alert's time in the worksheet
      const post = rx.posts.find((p) => p.body.element.key === surelyAbove[0])
      assert.equal(post.body.url, `${server.base}/alerts?event=${post.body.event_id}`)
      assert.ok(post.body.worksheet_url.startsWith(`${server.base}/?range=`), post.body.worksheet_url)
      await page.goto(post.body.url)
      const focus = page.getByTestId('event-focus')
      await focus.getByTestId('event-focus-message').waitFor()
      assert.match(await focus.getByTestId('event-focus-message').textContent(), new RegExp(`for client ${nameOf(surelyAbove[0]).replace('.', '\\.')} above`))
      assert.match(await focus.textContent(), /Webhook: delivered/)
      assert.equal(await page.locator('[data-testid="event"].selected').getAttribute('data-element'), surelyAbove[0])
      await focus.getByTestId('event-worksheet').click()
      assert.equal(page.url(), post.body.worksheet_url)
      const title = page.getByTestId('chart-title').first()
      await until('the client chart', async () => (await title.textContent()) === `NFS operations per second for client ${nameOf(surelyAbove[0])}`)
      assert.equal(await page.getByTestId('chart-card').count(), 1)
      // over the alert's time: its mark is on the chart
      const one = page.locator('[data-testid="chart-card"] [role="img"]').first()
      await until('the alert marked on the client chart', async () => (await one.getAttribute('aria-label')).includes(`alert: busy clients: client ${nameOf(surelyAbove[0])} (open)`))
      await t.shot('alerts-event-worksheet')

      // deleting the rule clears each open client once, and the receiver is told of each
      assert.equal((await api('DELETE', `/api/v1/alerts/${rule.id}`)).status(), 204)
      await until('a cleared post per client', async () => rx.posts.length === 2 * elements.length)
      const cleared = rx.posts.filter((p) => p.body.kind === 'alert.cleared')
      assert.deepEqual(cleared.map((p) => p.body.element.key).sort(), elements)
      assert.ok(cleared.every((p) => /cleared: the rule was deleted$/.test(p.body.message)))
      assert.deepEqual(t.consoleErrors, [])
    } finally {
      await rx.close()
    }
  })
})
