// Benchmark runs end to end: mark a run in the UI while the demo NAS serves its clients,
// import the clients' own results (one of them forged 30 % high), and read the verdict.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { authedFetch, demoInBrowser, setupProblem, until } from './server.mjs'

const skip = setupProblem()
if (skip) it(`end-to-end runs page (skipped: ${skip})`, { skip }, () => {})

async function api(base, path, init) {
  const r = await authedFetch(base + path, init)
  const body = await r.json()
  assert.ok(r.ok, `${path}: ${r.status} ${JSON.stringify(body)}`)
  return body
}

describe('Loupe benchmark runs in Chromium', { skip: skip ?? false }, () => {
  const t = demoInBrowser({
    backfill: 0,
    readyWhat: 'demo NFS traffic',
    ready: async (base) => {
      const q = await (await authedFetch(`${base}/api/v1/query?metric=nfs.bytes&by=client&start=-10s&end=now`)).json()
      return q.elements >= 3
    },
  })

  it('marks a run, imports results, flags the forged client, and follows the tolerance', async () => {
    await t.page.goto(t.server.base + '/')
    await t.page.getByTestId('nav-runs').click()
    await t.page.getByTestId('runs-page').waitFor()
    await t.page.getByText('No runs yet').waitFor()

    await t.page.getByTestId('run-name').fill('e2e <b>stream</b>')
    await t.page.getByTestId('run-start').click()
    const row = t.page.getByTestId('run-row')
    await until('the run to be listed as running', async () => (await row.getAttribute('data-running')) === 'true')
    const id = await row.getAttribute('data-run')
    assert.match(t.page.url(), new RegExp(`/runs\\?run=${id}$`))
    assert.equal(await t.page.getByTestId('run-title').textContent(), 'e2e <b>stream</b>') // text, not HTML
    await t.page.getByText('The run is in progress').waitFor()
    await t.page.waitForTimeout(6_000) // the demo clients keep reading and writing
    await t.page.getByTestId('run-stop').click()
    await until('the run to end', async () => (await t.page.getByTestId('run-state').textContent()).startsWith('ended'))
    await until('no results verdict', async () => (await t.page.getByTestId('run-report').getAttribute('data-verdict')) === 'no results')

    // What crossed the wire for two of the clients, once the run's last seconds are stored.
    const probe = await api(t.server.base, `/api/v1/runs/${id}/report`)
    const [a, b] = probe.unreported_clients
    assert.ok(a && b, JSON.stringify(probe))
    await api(t.server.base, `/api/v1/runs/${id}/results`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ format: 'simple', clients: [{ client: a, write_bytes: 1 }, { client: b, write_bytes: 1 }] }),
    })
    let wire = null
    await until('the run window to be complete', async () => {
      const rep = await api(t.server.base, `/api/v1/runs/${id}/report`)
      const w = Object.fromEntries(rep.clients.map((c) => [c.client, c.wire]))
      const same = wire && JSON.stringify(wire) === JSON.stringify(w)
      wire = w
      return same
    }, 20_000, 1_500)
    const honest = (c, k = 1) => ({ client: c, read_bytes: Math.round(wire[c].read_bytes * k), write_bytes: Math.round(wire[c].write_bytes * k),
      read_ops: wire[c].read_ops, write_ops: wire[c].write_ops })

    // A paste that is not JSON names the problem and changes nothing.
    await t.page.getByTestId('import-text').fill('{not json')
    await t.page.getByTestId('import-submit').click()
    assert.match(await t.page.getByTestId('import-error').textContent(), /not JSON/)

    await t.page.getByTestId('import-text').fill(JSON.stringify([honest(a), honest(b, 1.3)]))
    await t.page.getByTestId('import-submit').click()
    const report = t.page.getByTestId('run-report')
    await until('the fail verdict', async () => (await report.getAttribute('data-verdict')) === 'fail')
    const clientRow = (c) => t.page.locator(`[data-testid="run-client"][data-client="${c}"]`)
    assert.equal(await clientRow(a).getAttribute('data-passed'), 'true')
    assert.equal(await clientRow(a).getByTestId('client-findings').textContent(), 'agrees')
    assert.equal(await clientRow(b).getAttribute('data-passed'), 'false')
    assert.match(await clientRow(b).getByTestId('client-findings').textContent(), /wire bytes are 76\.9 % of reported/)
    assert.match(await t.page.getByTestId('run-verdict').textContent(), new RegExp(`fail: 1 client outside ±2 % \\(${b.replaceAll('.', '\\.')}\\)`))
    assert.equal(await t.page.getByTestId('total-agreement').textContent(), `${(100 * (wire[a].read_bytes + wire[a].write_bytes + wire[b].read_bytes + wire[b].write_bytes) / (honest(a).read_bytes + honest(a).write_bytes + honest(b, 1.3).read_bytes + honest(b, 1.3).write_bytes)).toFixed(1)} %`)
    await t.shot('runs-report-fail')

    // A looser tolerance, kept in the URL: now the same run passes.
    await t.page.getByTestId('run-tolerance').fill('40')
    await t.page.getByRole('button', { name: 'apply' }).click()
    await until('the pass verdict', async () => (await report.getAttribute('data-verdict')) === 'pass')
    assert.match(t.page.url(), /tol=40/)
    await t.page.reload()
    await until('the pass verdict after a reload', async () => (await t.page.getByTestId('run-report').getAttribute('data-verdict')) === 'pass')
    await t.shot('runs-report-pass')

    // Creates move no bytes: once a client reports some, a column compares them with the CREATE calls seen.
    assert.equal(await t.page.getByTestId('run-clients').getAttribute('data-creates'), 'false')
    await api(t.server.base, `/api/v1/runs/${id}/results`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ format: 'simple', clients: [{ ...honest(a), create_ops: 1234 }] }),
    })
    await t.page.reload()
    await until('the creates column', async () => (await t.page.getByTestId('run-clients').getAttribute('data-creates')) === 'true')
    const rep = await api(t.server.base, `/api/v1/runs/${id}/report?tolerance=40`)
    const ca = rep.clients.find((c) => c.client === a)
    assert.equal(await clientRow(a).getByTestId('client-creates').textContent(), `1,234 / ${ca.wire.create_ops.toLocaleString('en-US')}`)
    assert.equal(ca.creates_agreement_pct, (100 * ca.wire.create_ops) / 1234)

    // The same report as CSV, and the run's window in the worksheet.
    const csv = await (await authedFetch(t.server.base + (await t.page.getByTestId('run-csv').getAttribute('href')))).text()
    assert.match(csv.split('\n')[0], /^client,reported_bytes,wire_bytes/)
    await t.page.getByTestId('run-worksheet').click()
    await until('the worksheet', async () => new URL(t.page.url()).pathname === '/')
    assert.match(decodeURIComponent(t.page.url()), /nfs\.bytes/)
    // the run is marked on the chart of its window (named as text)
    const chart = t.page.getByTestId('timeseries-chart').first()
    await until('the run marked on the chart', async () => /runs marked: e2e <b>stream<\/b>/.test((await chart.getAttribute('aria-label')) ?? ''))
    await t.shot('runs-in-worksheet')

    // A second run, then the two side by side: per-client change and latency heat maps.
    const now = Date.now() / 1000
    const second = await api(t.server.base, '/api/v1/runs', {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'e2e second', start: now - 5 }),
    })
    await api(t.server.base, `/api/v1/runs/${second.id}/stop`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ end: now - 1 }) })
    await t.page.getByTestId('nav-runs').click()
    await until('both runs listed', async () => (await t.page.getByTestId('run-row').count()) === 2)
    assert.equal(await t.page.getByTestId('run-compare').isDisabled(), true)
    for (const r of await t.page.getByTestId('run-pick').all()) await r.check()
    await t.page.getByTestId('run-compare').click()
    await t.page.getByTestId('run-compare-view').waitFor()
    assert.equal(await t.page.getByTestId('compare-b').textContent(), 'e2e <b>stream</b>')
    assert.equal(await t.page.getByTestId('compare-a').textContent(), 'e2e second')
    const rows = t.page.getByTestId('compare-row')
    await until('clients in both runs', async () => (await rows.count()) >= 3)
    const busiest = await rows.first().getAttribute('data-client')
    assert.match(await rows.first().getByTestId('bytes-delta').textContent(), /^[+−]\d+\.\d %$/)
    await rows.first().click()
    assert.match(t.page.url(), new RegExp(`client=${busiest.replaceAll('.', '\\.')}`))
    for (const side of ['A', 'B']) {
      const hm = t.page.getByTestId(`compare-heatmap-${side}-chart`)
      await until(`heat map ${side} of ${busiest}`, async () => ((await hm.getAttribute('aria-label')) ?? '').includes(`NFS latency, ${busiest}, run ${side}`))
      // its cells are drawn as a raster beneath the chart: some of its pixels are painted
      const raster = t.page.getByTestId(`compare-heatmap-${side}`).locator('canvas.hm-raster')
      const painted = () => raster.evaluate((c) => {
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data
        let n = 0
        for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++
        return n
      })
      await until(`heat map ${side}'s cells drawn`, async () => (await painted()) > 100)
    }
    await t.shot('runs-compare')
    assert.deepEqual(t.consoleErrors, [])
  })
})
