// The worksheet's tools, as a person uses them on the demo NAS: the time toolbar (back and
// forward a range, forward to now, zoom, a unit per button with shift-click for one more, the
// keyboard, an absolute range), the legend sorted, searched and an element highlighted, the
// shared crosshair (heat maps too) and a chart with its own time, a heat map's outliers cropped, and exports (CSV, PNG, the worksheet as JSON
// and back). Each is checked against the URL and
// what the page shows; the legend's order, search and highlight and the crop outlive a reload.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { readFileSync } from 'node:fs'
import { authedFetch, demoInBrowser, setupProblem, until } from './server.mjs'

const skip = setupProblem()
if (skip) it(`end-to-end worksheet tools (skipped: ${skip})`, { skip }, () => {})

const pad = (n) => String(n).padStart(2, '0')
const local = (t) => {
  const d = new Date(t * 1000)
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
}
const clock = (t) => local(t).slice(11)

describe('Loupe worksheet tools in Chromium', { skip: skip ?? false }, () => {
  const t = demoInBrowser({ backfill: 1500, readyMs: 120_000 })
  const params = () => new URL(t.page.url()).searchParams
  const shown = () => t.page.getByTestId('time-shown').textContent()
  const lastPoint = async () => (await t.page.getByTestId('last-ts').textContent()).replace('last point ', '')

  it('moves back and forward a range, zooms, and shows units', async () => {
    const { page, server } = t
    await page.goto(`${server.base}/?s=nfs.ops`)
    await page.getByTestId('timeseries-chart').waitFor()
    assert.equal(await shown(), '10 minutes, live')
    assert.equal(await page.getByTestId('time-forward').isDisabled(), true)

    // back one range: paused where the live range began, and the chart ends there
    const before = Math.floor(Date.now() / 1000)
    await page.getByTestId('time-back').click()
    await until('paused a range back', async () => params().get('paused') === '1')
    const at = Number(params().get('at'))
    assert.ok(Math.abs(at - (before - 2 - 600)) <= 3, `${at} vs ${before - 602}`)
    assert.equal(await shown(), `10 minutes until ${local(at).replace('T', ' ')}`)
    await until('the chart ending at the paused time', async () => (await lastPoint()) === clock(at - 1) || (await lastPoint()) === clock(at))
    // and forward again: that reaches now, so live
    await page.getByTestId('time-forward').click()
    await until('live again', async () => !params().has('paused'))
    assert.equal(await shown(), '10 minutes, live')

    // zoom in halves, zoom out doubles
    await page.getByTestId('zoom-in').click()
    await until('5 minutes', async () => params().get('range') === '5m')
    await page.getByTestId('zoom-out').click()
    await page.getByTestId('zoom-out').click()
    await until('20 minutes', async () => params().get('range') === '20m')
    assert.equal(await shown(), '20 minutes, live')

    // a unit per button, and one more with shift
    await page.getByTestId('show-hour').click()
    await until('an hour', async () => params().get('range') === '1h')
    await page.getByTestId('show-hour').click({ modifiers: ['Shift'] })
    await until('two hours', async () => params().get('range') === '2h')
    assert.equal(await shown(), '2 hours, live')
    assert.equal(await page.getByTestId('show-hour').getAttribute('class'), 'active')
    await page.getByTestId('show-month').click()
    await until('a month', async () => params().get('range') === '30d')
    assert.equal(await page.getByTestId('show-month').getAttribute('class'), 'active')
    await page.getByTestId('show-minute').click()

    // the keyboard: ← back, End to now, + zoom in
    await page.locator('body').click({ position: { x: 5, y: 300 } })
    await page.keyboard.press('ArrowLeft')
    await until('paused by ←', async () => params().get('paused') === '1' && params().get('range') === '1m')
    await page.keyboard.press('End')
    await until('live by End', async () => !params().has('paused'))
    await page.keyboard.press('d')
    await until('a day by d', async () => params().get('range') === '1d')
    await page.keyboard.press('-')
    await until('two days by -', async () => params().get('range') === '2d')
    assert.deepEqual(t.consoleErrors, [])
  })

  it('shows an absolute range, and says why it cannot show a bad one', async () => {
    const { page } = t
    const now = Math.floor(Date.now() / 1000)
    await page.getByTestId('range-button').click()
    await page.getByTestId('range-from').fill(local(now - 1200))
    await page.getByTestId('range-to').fill(local(now - 1500))
    await page.getByTestId('range-apply').click()
    assert.equal(await page.getByTestId('range-error').textContent(), 'the end must be after the start')
    await page.getByTestId('range-to').fill(local(now - 600))
    await page.getByTestId('range-apply').click()
    await until('the absolute range', async () => params().get('at') === String(now - 600))
    assert.equal(params().get('range'), null) // 10 minutes: the default, left out of the URL
    assert.equal(await shown(), `10 minutes until ${local(now - 600).replace('T', ' ')}`)
    await until('the chart ending at the range end', async () => [clock(now - 601), clock(now - 600)].includes(await lastPoint()))
    await t.shot('time-toolbar')
    assert.deepEqual(t.consoleErrors, [])
  })

  it('sorts, searches and highlights the legend', async () => {
    const { page, server } = t
    await page.goto(`${server.base}/?range=10m&paused=1&s=nfs.ops;by:client;top:20`) // paused: rows hold still
    const rows = page.getByTestId('legend-row')
    await until('20 clients in the legend', async () => (await rows.count()) === 20)
    const keys = () => rows.evaluateAll((rs) => rs.map((r) => r.dataset.key))
    const values = (col) => page.getByTestId(`legend-${col}`).evaluateAll((tds) => tds.map((td) => Number(td.dataset.value)))
    const desc = (xs) => xs.every((x, i) => i === 0 || xs[i - 1] >= x)
    assert.ok(desc(await values('mean')), 'by mean, largest first')
    await page.getByTestId('legend-sort-name').click()
    const byName = [...(await keys())].sort((a, b) => a.localeCompare(b, undefined, { numeric: true }))
    assert.deepEqual(await keys(), byName)
    await page.getByTestId('legend-sort-name').click()
    assert.deepEqual(await keys(), [...byName].reverse())
    await page.getByTestId('legend-sort-last').click()
    assert.ok(desc(await values('last')), 'by the newest value, largest first')
    assert.equal(await page.locator('th[aria-sort="descending"]').textContent(), 'now ▾')

    const search = page.getByTestId('legend-search')
    await search.pressSequentially('10.0.0.1') // typed key by key: each goes to the URL
    assert.equal(await search.inputValue(), '10.0.0.1')
    const found = await keys()
    assert.ok(found.length >= 1 && found.length < 20 && found.every((k) => k.includes('10.0.0.1')), found.join())
    assert.equal(params().get('s'), 'nfs.ops;by:client;top:20;sort:-last;q:10.0.0.1')
    await page.reload() // a shared link shows the same legend
    await until('the search kept', async () => (await page.getByTestId('legend-search').inputValue()) === '10.0.0.1')
    assert.deepEqual(await keys(), found)
    assert.equal(await page.locator('th[aria-sort="descending"]').textContent(), 'now ▾')
    await search.fill('')
    await until('all 20 back', async () => (await rows.count()) === 20)
    assert.equal(params().get('s'), 'nfs.ops;by:client;top:20;sort:-last')

    const first = rows.first()
    const key = await first.getAttribute('data-key')
    await first.click({ modifiers: ['Shift'] })
    assert.match(await first.getAttribute('class'), /legend-lit/)
    assert.match(await rows.nth(1).getAttribute('class'), /legend-dim/)
    assert.equal(await page.getByTestId('drill-menu').count(), 0) // a shift-click highlights, it does not drill
    const chart = page.getByTestId('timeseries-chart')
    assert.ok((await chart.getAttribute('aria-label')).endsWith(`, ${key} highlighted`))
    assert.equal(params().get('s'), `nfs.ops;by:client;top:20;sort:-last;hl:${key}`)
    await t.shot('legend-highlight')
    const order = await keys()
    await page.reload()
    await until('the legend as it was', async () => JSON.stringify(await keys()) === JSON.stringify(order))
    assert.match(await rows.first().getAttribute('class'), /legend-lit/)
    assert.ok((await chart.getAttribute('aria-label')).endsWith(`, ${key} highlighted`))
    await rows.first().click({ modifiers: ['Shift'] })
    assert.doesNotMatch(await chart.getAttribute('aria-label'), /highlighted/)
    assert.equal(params().get('s'), 'nfs.ops;by:client;top:20;sort:-last')
    assert.deepEqual(t.consoleErrors, [])
  })

  it('shows the time under the pointer on every synced chart, heat maps included, and not on an unsynced one', async () => {
    const { page, server } = t
    await page.goto(`${server.base}/?range=10m&paused=1&s=nfs.ops&s=nfs.bytes&s=nfs.ops;by:latency;d:heatmap`)
    const charts = page.getByTestId('timeseries-chart')
    const heat = page.getByTestId('heatmap-chart')
    await until('two charts and a heat map', async () => (await charts.count()) === 2 && (await heat.count()) === 1)
    // ECharts draws its tooltip as a div inside the chart; shown means visible
    const tip = (i) => charts.nth(i).locator('div[style*="z-index: 9999999"]')
    const tipShown = async (i) => (await tip(i).count()) > 0 && (await tip(i).first().isVisible())
    const hover = async (el, at = 0.55) => {
      await el.scrollIntoViewIfNeeded()
      const box = await el.boundingBox()
      await page.mouse.move(box.x + box.width * (at - 0.05), box.y + box.height * 0.5)
      await page.mouse.move(box.x + box.width * at, box.y + box.height * 0.5)
    }
    // the hovered time, as the tooltip names it: "YYYY-MM-DD HH:MM:SS"
    const tipTime = async (i) => (await tip(i).first().textContent()).slice(0, 19)
    const crosshair = async () => Number((await heat.getAttribute('data-crosshair')) || 0)
    await hover(charts.nth(0))
    await until('the tooltip on the hovered chart', () => tipShown(0))
    await until('the same time on the other chart', () => tipShown(1))
    const time0 = await tipTime(0)
    assert.equal(await tipTime(1), time0)
    // the heat map draws its pointer line at that time: the column holding it
    await until('the heat map follows', async () => (await crosshair()) > 0)
    const onHeat = local(await crosshair()).replace('T', ' ')
    assert.ok(Math.abs(Date.parse(onHeat) - Date.parse(time0)) <= 10_000, `${onHeat} vs ${time0}`)
    await t.shot('synced-crosshair')
    // hovering the heat map shows its time on the line charts
    await hover(heat, 0.3)
    await until('the line chart follows the heat map', async () => (await tipShown(0)) && (await tipTime(0)) !== time0)
    const fromHeat = Date.parse(await tipTime(0))
    assert.ok(fromHeat < Date.parse(time0), 'further left on the heat map is earlier')
    // leaving the heat map takes the time off the others
    await page.mouse.move(5, 5)
    await until('tooltips gone', async () => !(await tipShown(0)) && !(await tipShown(1)))
    // unsync the second chart: hovering the first no longer shows anything on it
    await page.getByTestId('unsync-chart').nth(1).click()
    assert.equal(await page.getByTestId('unsync-chart').nth(1).textContent(), 'unsynced')
    await hover(charts.nth(0))
    await until('the tooltip on the hovered chart again', () => tipShown(0))
    await new Promise((r) => setTimeout(r, 500))
    assert.equal(await tipShown(1), false)
    assert.deepEqual(t.consoleErrors, [])
  })

  it("gives an unsynced chart its own time range, kept in the link and in a saved worksheet", async () => {
    const { page, server } = t
    await page.goto(`${server.base}/?range=10m&s=nfs.ops&s=nfs.ops;by:latency;d:heatmap`)
    await page.getByTestId('timeseries-chart').waitFor()
    await page.getByTestId('heatmap-chart').waitFor()
    const cards = page.getByTestId('chart-card')
    const line = cards.nth(0)
    const heatCard = cards.nth(1)
    assert.equal(await line.getByTestId('chart-time').count(), 0, 'synced: no toolbar of its own')
    // unsync the heat map: it gets its own toolbar, starting at the worksheet's time
    await heatCard.getByTestId('unsync-chart').click()
    const own = heatCard.getByTestId('chart-time')
    await own.waitFor()
    assert.equal(await own.getByTestId('time-shown').textContent(), '10 minutes, live')
    await until('the link says so', async () => params().getAll('s')[1] === 'nfs.ops;by:latency;d:heatmap;t:10m')
    // an hour of it, a range back: the heat map alone moves; the worksheet stays live on 10 minutes
    await own.getByTestId('show-hour').click()
    const before = Math.floor(Date.now() / 1000)
    await own.getByTestId('time-back').click()
    await until('its own pause in the link', async () => /;t:1h@\d+$/.test(params().getAll('s')[1]))
    const at = Number(params().getAll('s')[1].split('@')[1])
    assert.ok(Math.abs(at - (before - 2 - 3600)) <= 3, `${at} vs ${before - 3602}`)
    assert.equal(params().get('paused'), null)
    assert.equal(await page.getByTestId('time-toolbar').first().getByTestId('time-shown').textContent(), '10 minutes, live')
    assert.match(await own.getByTestId('time-shown').textContent(), /^1 hour until /)
    // the heat map asks for that hour: its footer names a coarser column than the live 10 minutes
    await until('an hour in its columns', async () => /tier, (\d+)s per column/.test(await heatCard.locator('footer').textContent()))
    const step = Number(/(\d+)s per column/.exec(await heatCard.locator('footer').textContent())[1])
    assert.ok(step >= 2, `an hour back takes coarser columns, got ${step}s`)
    assert.match(await line.locator('footer').textContent(), /live|waiting for live data/)
    // the page's keys drive the worksheet's toolbar, not the chart's own
    await page.locator('body').click({ position: { x: 5, y: 5 } })
    await page.keyboard.press('h')
    await until('the worksheet shows an hour', async () => params().get('range') === '1h')
    assert.equal(params().getAll('s')[1], `nfs.ops;by:latency;d:heatmap;t:1h@${at}`)
    await t.shot('chart-own-time')
    // a reload shows the same
    await page.reload()
    await heatCard.getByTestId('chart-time').waitFor()
    assert.match(await heatCard.getByTestId('chart-time').getByTestId('time-shown').textContent(), /^1 hour until /)
    // saved and opened again: the chart keeps its own time
    await page.getByTestId('save-button').click()
    await page.getByTestId('save-name').fill('Own time')
    await page.getByTestId('save-submit').click()
    await until('saved', async () => params().get('ws') !== null)
    const id = params().get('ws')
    const saved = await (await authedFetch(`${server.base}/api/v1/worksheets/${id}`)).json()
    assert.equal(saved.statistics[1].view, `t:1h@${at}`)
    await page.goto(`${server.base}/`)
    await page.getByTestId('open-button').click()
    await page.getByTestId('saved-worksheet').filter({ hasText: 'Own time' }).first().click()
    await until('opened with its own time', async () => params().getAll('s')[1] === `nfs.ops;by:latency;d:heatmap;t:1h@${at}`)
    // synced again: the toolbar goes and the chart follows the worksheet
    await page.getByTestId('chart-card').nth(1).getByTestId('unsync-chart').click()
    await until('back on the worksheet time', async () => params().getAll('s')[1] === 'nfs.ops;by:latency;d:heatmap')
    assert.equal(await page.getByTestId('chart-time').count(), 0)
    await authedFetch(`${server.base}/api/v1/worksheets/${id}`, { method: 'DELETE' })
    assert.deepEqual(t.consoleErrors, [])
  })

  it('shows the busiest and quietest second inside coarse points', async () => {
    const { page, server } = t
    const at = Math.floor(Date.now() / 1000) - 5
    await page.goto(`${server.base}/?range=1h&paused=1&at=${at}&s=nfs.ops`)
    const chart = page.getByTestId('timeseries-chart')
    await chart.waitFor()
    const toggle = page.getByTestId('minmax-toggle') // an hour in ~600 points: several seconds each
    assert.equal(await toggle.textContent(), 'min/max')
    await toggle.click()
    assert.equal(await toggle.getAttribute('aria-pressed'), 'true')
    const q = await (await authedFetch(`${server.base}/api/v1/query?metric=nfs.ops&start=${at - 3600}&end=${at}&points=600&minmax=true`)).json()
    assert.ok(q.step > 1 && q.total_min.length === q.total.length, JSON.stringify({ step: q.step }))
    q.total.forEach((v, i) => assert.ok(q.total_min[i] <= v + 1e-6 && v <= q.total_max[i] + 1e-6, `point ${i}: ${q.total_min[i]} ${v} ${q.total_max[i]}`))
    assert.ok(q.total.some((v, i) => q.total_max[i] > q.total_min[i]), 'the demo load varies within a point')
    // hovering where the demo ran: the tooltip names both lines with their values
    const tip = chart.locator('div[style*="z-index: 9999999"]')
    const box = await chart.boundingBox()
    const tipText = async () => ((await tip.count()) > 0 ? await tip.first().textContent() : '')
    let hovers = 0
    await until('the tooltip with min and max', async () => {
      // moved on each try: echarts shows a tooltip on a move, and on a loaded host the lines can
      // arrive after the first one
      const x = 0.6 + 0.05 * (hovers++ % 4)
      await page.mouse.move(box.x + box.width * x, box.y + box.height * 0.5)
      const text = await tipText()
      return text.includes('max second') && text.includes('min second')
    })
    await t.shot('minmax')
    // kept in the link: a reload (or whoever gets the link) sees the lines too
    assert.equal(params().get('s'), 'nfs.ops;mm:1')
    await page.reload()
    await until('min/max shown after a reload', async () => (await page.getByTestId('minmax-toggle').getAttribute('aria-pressed')) === 'true')
    await page.getByTestId('minmax-toggle').click()
    await until('and off again', async () => params().get('s') === 'nfs.ops')
    assert.deepEqual(t.consoleErrors, [])
  })

  it('moves a live heat map on each second, reading only its newest columns between full reads', async () => {
    const { page, server } = t
    const reads = []
    const onRequest = (r) => {
      const u = new URL(r.url())
      if (u.pathname === '/api/v1/heatmap') reads.push({ at: Date.now(), url: u })
    }
    page.on('request', onRequest)
    await page.goto(`${server.base}/?range=1h&s=nfs.ops;by:latency;d:heatmap`)
    const rows = page.getByTestId('heatmap-rows')
    await rows.waitFor()
    const footer = await page.getByTestId('chart-card').locator('footer').textContent()
    const step = Number(/(\d+)s per column/.exec(footer)[1])
    const from = Date.now()
    const seen = new Set()
    while (Date.now() - from < 6000) {
      seen.add(`${await rows.getAttribute('data-end')}/${await rows.getAttribute('data-newest')}`)
      await page.waitForTimeout(200)
    }
    page.off('request', onRequest)
    const inWindow = reads.filter((r) => r.at >= from)
    const tails = inWindow.filter((r) => r.url.searchParams.has('step'))
    // an hour re-reads in full every 10 s; in between, a read a second of the newest columns
    assert.ok(tails.length >= 4, `${tails.length} reads of the newest columns in 6 s`)
    assert.ok(inWindow.length - tails.length <= 1, `${inWindow.length - tails.length} full reads in 6 s`)
    for (const { url } of tails) {
      assert.equal(Number(url.searchParams.get('step')), step)
      assert.equal(Number(url.searchParams.get('start')) % step, 0, 'from a column boundary')
    }
    assert.ok(seen.size >= 4, `the newest column changed ${seen.size - 1} times in 6 s: ${[...seen].join(' ')}`)
    // such a read is the newest column or two, not the hour
    const tail = await (await authedFetch(tails.at(-1).url.href)).json()
    assert.ok(tail.timestamps.length <= 2 && tail.step === step, JSON.stringify({ n: tail.timestamps.length, step: tail.step }))
    assert.deepEqual(t.consoleErrors, [])
  })

  it('crops the heat map\'s outliers: 0.1 %, 1 %, 5 %, and back', async () => {
    const { page, server } = t
    await page.goto(`${server.base}/?range=10m&paused=1&s=nfs.ops;by:latency;d:heatmap`)
    const rows = page.locator('[data-testid="band-rates"] tr')
    await until('the rate per band', async () => (await rows.count()) > 3)
    const bands = () => rows.evaluateAll((rs) => rs.map((r) => [Number(r.dataset.index), Number(r.dataset.rate)]))
    const all = await bands() // highest bucket first
    const total = all.reduce((a, [, r]) => a + r, 0)
    const expectKept = (pct) => {
      let dropped = 0
      let n = 0
      while (n < all.length - 1 && dropped + all[n][1] <= (total * pct) / 100) dropped += all[n++][1]
      return { kept: all.slice(n).map(([i]) => i), dropped }
    }
    const button = page.getByTestId('crop-outliers')
    let croppedAny = false
    for (const pct of [0.1, 1, 5]) {
      await button.click()
      assert.equal(await button.getAttribute('data-crop'), String(pct))
      const want = expectKept(pct)
      await until(`the top ${pct} % cropped`, async () => JSON.stringify((await bands()).map(([i]) => i)) === JSON.stringify(want.kept))
      if (want.kept.length < all.length) {
        croppedAny = true
        assert.match(await page.getByTestId('crop-note').textContent(), new RegExp(`and above not shown \\(top ${pct} % cropped\\)$`))
      }
    }
    assert.ok(croppedAny, 'the demo\'s latency tail is cropped at 5 % at the latest')
    assert.equal(params().get('s'), 'nfs.ops;by:latency;d:heatmap;crop:5')
    await t.shot('heatmap-cropped')
    // a shared link shows the same crop
    const note = await page.getByTestId('crop-note').textContent()
    await page.reload()
    await until('the crop kept', async () => JSON.stringify((await bands()).map(([i]) => i)) === JSON.stringify(expectKept(5).kept))
    assert.equal(await button.getAttribute('data-crop'), '5')
    assert.equal(await page.getByTestId('crop-note').textContent(), note)
    await button.click()
    assert.equal(await button.textContent(), 'crop outliers')
    await until('every band back', async () => (await bands()).length === all.length)
    assert.equal(await page.getByTestId('crop-note').count(), 0)
    assert.equal(params().get('s'), 'nfs.ops;by:latency;d:heatmap')
    assert.deepEqual(t.consoleErrors, [])
  })

  it('exports a chart as CSV and PNG, and the worksheet as JSON that imports back', async () => {
    const { page, server } = t
    const at = Math.floor(Date.now() / 1000) - 30
    await page.goto(`${server.base}/?range=10m&paused=1&at=${at}&s=nfs.ops;by:client;sort:name&s=nfs.ops;by:latency;d:heatmap;crop:1;t:1h`)
    await page.getByTestId('timeseries-chart').waitFor()
    await page.getByTestId('heatmap-chart').waitFor()
    const save = async (button) => {
      const [dl] = await Promise.all([page.waitForEvent('download'), button.click()])
      return { name: dl.suggestedFilename(), body: readFileSync(await dl.path()) }
    }
    // the time series' CSV holds exactly the points the API gives for the paused range
    const csv = await save(page.getByTestId('export-csv').first())
    assert.equal(csv.name, 'nfs-operations-per-second-broken-down-by-client.csv')
    const lines = csv.body.toString().trimEnd().split('\r\n')
    const head = lines[0].split(',')
    assert.deepEqual([head[0], head[1], head.at(-1)], ['time', 'unix', 'total'])
    const q = await (await authedFetch(`${server.base}/api/v1/query?metric=nfs.ops&by=client&start=${at - 600}&end=${at}&points=600`)).json()
    assert.equal(lines.length - 1, q.timestamps.length)
    assert.deepEqual(lines.slice(1).map((l) => Number(l.split(',')[1])), q.timestamps)
    assert.deepEqual(lines.slice(1).map((l) => Number(l.split(',').at(-1))), q.total)
    const png = await save(page.getByTestId('export-png').first())
    assert.equal(png.name, 'nfs-operations-per-second-broken-down-by-client.png')
    assert.deepEqual([...png.body.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
    assert.ok(png.body.length > 5000, `${png.body.length} bytes`)
    // the heat map's PNG has its cells (drawn beneath the chart) as well as its axes: most of the
    // plot's pixels are not the card's background
    const hpng = await save(page.getByTestId('export-png').nth(1))
    const painted = await page.evaluate(async (b64) => {
      const img = new Image()
      img.src = `data:image/png;base64,${b64}`
      await img.decode()
      const c = document.createElement('canvas')
      ;[c.width, c.height] = [img.width, img.height]
      const ctx = c.getContext('2d')
      ctx.drawImage(img, 0, 0)
      // inside the plot: right of the bucket labels, above the time labels (the PNG is at twice the size)
      const d = ctx.getImageData(200, 40, img.width - 260, img.height - 180).data
      const bg = [...ctx.getImageData(4, 4, 1, 1).data]
      let differ = 0
      for (let i = 0; i < d.length; i += 4) if (Math.abs(d[i] - bg[0]) + Math.abs(d[i + 1] - bg[1]) + Math.abs(d[i + 2] - bg[2]) > 30) differ++
      return differ / (d.length / 4)
    }, hpng.body.toString('base64'))
    assert.ok(painted > 0.3, `${(painted * 100).toFixed(1)} % of the heat map PNG's plot is painted`)
    const hcsv = await save(page.getByTestId('export-csv').nth(1))
    assert.equal(hcsv.body.toString().split('\r\n')[0], 'time,unix,latency,latency_from,latency_to,ops/s')
    assert.ok(hcsv.body.toString().split('\r\n').length > 100)

    // the worksheet as a file, and back into an empty worksheet
    const file = await save(page.getByTestId('export-worksheet'))
    assert.equal(file.name, 'untitled-worksheet.json')
    const doc = JSON.parse(file.body.toString())
    assert.equal(doc.format, 'loupe-worksheet')
    assert.deepEqual(doc.statistics.map((s) => [s.metric, s.by, s.display, s.view]), [['nfs.ops', 'client', 'area', 'sort:name'], ['nfs.ops', 'latency', 'heatmap', 'crop:1;t:1h']])
    await page.goto(`${server.base}/`)
    await page.getByTestId('worksheet-empty').waitFor()
    await page.getByTestId('import-file').setInputFiles({ name: 'w.json', mimeType: 'application/json', buffer: file.body })
    await until('the imported charts', async () => (await page.getByTestId('chart-card').count()) === 2)
    // how each chart was shown comes back too: the legend's order, the crop, the heat map's own time
    assert.deepEqual(new URL(page.url()).searchParams.getAll('s'), ['nfs.ops;by:client;sort:name', 'nfs.ops;by:latency;d:heatmap;crop:1;t:1h'])
    assert.equal(await page.getByTestId('crop-outliers').getAttribute('data-crop'), '1')
    assert.equal(await page.getByTestId('chart-time').getByTestId('time-shown').textContent(), '1 hour, live')
    await page.getByTestId('import-file').setInputFiles({ name: 'bad.json', mimeType: 'application/json', buffer: Buffer.from('nope') })
    assert.equal(await page.getByTestId('import-error').textContent(), 'Cannot import bad.json: the file is not JSON')
    assert.equal(await page.getByTestId('chart-card').count(), 2) // nothing lost
    assert.deepEqual(t.consoleErrors, [])
  })
})
