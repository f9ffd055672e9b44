// Why is this client slow, end to end: from a client in a drill-down to its verdict page, with
// the demo NAS's traffic, and from a reason to the chart behind it.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { authedFetch, demoInBrowser, setupProblem, until } from './server.mjs'

const skip = setupProblem()
if (skip) it(`end-to-end client diagnosis (skipped: ${skip})`, { skip }, () => {})

describe('Loupe client diagnosis in Chromium', { skip: skip ?? false }, () => {
  const t = demoInBrowser({
    backfill: 0,
    readyWhat: 'a minute of demo NFS traffic',
    ready: async (base) => {
      const q = await (await authedFetch(`${base}/api/v1/query?metric=nfs.ops&start=-20s&end=-2s`)).json()
      return q.total.filter((v) => v > 0).length >= 10
    },
  })

  it('opens a client\'s verdict from the drill-down and a reason\'s chart from the verdict', async () => {
    await t.page.goto(`${t.server.base}/?range=1m&s=nfs.ops;by:client`)
    const card = t.page.locator('[data-testid="legend-row"]').first()
    await card.waitFor()
    const client = (await card.getAttribute('data-key')).trim()
    await card.click()
    await t.page.getByTestId('drill-menu').waitFor()
    await t.page.getByTestId('drill-diagnose').click()
    await t.page.getByTestId('client-page').waitFor()
    assert.match(t.page.url(), new RegExp(`/clients\\?client=${client.replaceAll('.', '\\.')}&range=1m$`))
    assert.equal(await t.page.getByTestId('client-name').textContent(), client)
    const verdict = t.page.getByTestId('client-verdict')
    await verdict.waitFor()
    // one read of the verdict, its window and its link figures: the page re-reads live data every 10 s
    const shown = await verdict.evaluate((el) => ({
      ...el.dataset,
      link: document.querySelector('[data-testid="client-link"]').textContent,
      busy: document.querySelector('[data-testid="client-link-busy"]').textContent,
    }))
    const kind = shown.verdict
    assert.ok(['network-bound', 'client-bound', 'server-latency-bound', 'healthy'].includes(kind), kind)
    // the facts agree with the API's over the same window, and every reason has a chart
    const api = await (await authedFetch(`${t.server.base}/api/v1/clients/${client}/diagnosis?start=${shown.start}&end=${shown.end}`)).json()
    assert.deepEqual([api.start, api.end], [Number(shown.start), Number(shown.end)])
    assert.equal(api.verdict, kind)
    assert.ok((await t.page.getByTestId('client-reason').count()) >= 1)
    assert.ok((await t.page.getByTestId('client-op').count()) >= 1)
    // its share of the NFS traffic, and the server's disks (live data: the page asked a moment apart)
    assert.ok(api.traffic_share > 0 && api.traffic_share < 1, String(api.traffic_share))
    const share = parseFloat(await t.page.getByTestId('client-share').textContent())
    assert.ok(Math.abs(share - 100 * api.traffic_share) < 0.5 * 100 * api.traffic_share, `${share} vs ${api.traffic_share}`)
    // its share of the server's link: the interface its route names (the demo NAS's NIC), the
    // kernel's speed for it, its busier direction; and how full the link is, as the API says
    assert.equal(api.link.interface, 'ixgbe0')
    assert.equal(api.link.capacity_bytes_per_s, 1.25e9)
    const link = shown.link.match(/^([\d.]+) % of (\S+)'s 10 Gbit\/s \((sent to it|received from it)\)$/)
    assert.ok(link, shown.link)
    assert.equal(link[2], api.link.interface)
    assert.equal(link[3], api.link.share_direction === 'out' ? 'sent to it' : 'received from it')
    assert.ok(api.link.share > 0 && api.link.share < 0.8, String(api.link.share))
    // the same window, read again a moment later: the same share but for seconds stored in between
    assert.ok(Math.abs(Number(link[1]) - 100 * api.link.share) <= 0.1 * 100 * api.link.share, `${shown.link} vs ${api.link.share}`)
    const busy = shown.busy.match(/^([\d.]+) % (in|out)$/)
    assert.ok(busy, shown.busy)
    assert.equal(busy[2], api.link.utilisation_direction)
    assert.ok(Math.abs(Number(busy[1]) - 100 * api.link.utilisation) <= 0.1 * 100 * api.link.utilisation, `${shown.busy} vs ${api.link.utilisation}`)
    assert.ok(api.link.utilisation >= api.link.share, 'the link carries at least this client')
    assert.ok(api.disks.length >= 1)
    const disks = await t.page.getByTestId('client-disk').evaluateAll((rows) => rows.map((r) => r.dataset.disk))
    assert.equal(disks.length, Math.min(5, api.disks.length))
    assert.ok(disks.every((d) => api.disks.some((x) => x.disk === d)), disks.join())
    if (api.disks.length > 5) assert.match(await t.page.getByTestId('client-disks-more').textContent(), new RegExp(`and ${api.disks.length - 5} more disks`))
    // the server's latency distribution for this client's operations
    const hm = t.page.getByTestId('client-latency-chart')
    await until('the client latency heat map', async () => ((await hm.getAttribute('aria-label')) ?? '') === `Server latency of ${client}'s operations`)
    await t.shot('client-verdict')
    await t.page.getByTestId('reason-chart').first().click()
    await until('the evidence chart', async () => new URL(t.page.url()).pathname === '/')
    assert.match(decodeURIComponent(t.page.url()), new RegExp(`${api.reasons[0].statistic.metric.replace('.', '\\.')}`))
    await t.page.locator('[data-testid="timeseries-chart"], [data-testid="heatmap-chart"]').first().waitFor()
    // an address that sent nothing is idle, and says so
    await t.page.goto(`${t.server.base}/clients?client=192.0.2.1`)
    await until('idle verdict', async () => (await t.page.getByTestId('client-verdict').getAttribute('data-verdict')) === 'idle')
    assert.deepEqual(t.consoleErrors, [])
  })
})
