// A heat map's bucket-axis zoom, as a person uses it on the demo NAS: a shift-drag across a few
// latency buckets draws only those (checked by hovering the drawn rows), the side panel lists
// them and says what lies outside, the link keeps the zoom through a reload, "reset zoom" brings
// every bucket back, and the same zoom is set from the keyboard. A plain drag and a shift-click
// still select and extend a band, a band outside the zoom keeps its rate and members, and the
// zoom combines with "crop outliers". A drag across columns as well selects the band over that time span.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { demoInBrowser, setupProblem, until } from './server.mjs'

const skip = setupProblem()
if (skip) it(`end-to-end heat-map zoom (skipped: ${skip})`, { skip }, () => {})

// The heat map's grid inside its canvas (charts/heatmap/transform.ts: HEAT_GRID).
const GRID = { left: 70, right: 16, top: 12, bottom: 50 }
const rate = (text) => Number(text.replace(/,/g, '').match(/[\d.]+/)[0])

describe('Loupe heat-map bucket zoom in Chromium', { skip: skip ?? false }, () => {
  const t = demoInBrowser({ backfill: 300 }, { width: 1280, height: 800 })
  const params = () => new URL(t.page.url()).searchParams
  const chart = () => t.page.getByTestId('heatmap-chart')
  /** The bucket exponents the chart draws, lowest first. */
  const drawn = async () => (await t.page.getByTestId('heatmap-rows').getAttribute('data-rows')).split(',').filter(Boolean).map(Number)
  /** The side panel's rate per band, highest bucket first. */
  const listed = () =>
    t.page.locator('[data-testid="band-rates"] tr').evaluateAll((rs) =>
      rs.map((r) => ({ index: Number(r.dataset.index), rate: Number(r.dataset.rate), label: r.children[1].textContent, selected: r.className === 'selected' })),
    )
  const bucketsIn = (rows, lo, hi) => rows.filter((e) => e >= lo && e <= hi)

  /** Where the middle of a bucket's row is, in a column at a fraction of the grid's width. */
  async function at(rows, exponent, across) {
    const box = await chart().locator('canvas').first().boundingBox()
    const i = rows.indexOf(exponent)
    assert.ok(i >= 0, `bucket ${exponent} is drawn`)
    const h = box.height - GRID.top - GRID.bottom
    return { x: box.x + GRID.left + (box.width - GRID.left - GRID.right) * across, y: box.y + GRID.top + h * (1 - (i + 0.5) / rows.length) }
  }
  /** The tooltip at a point ('' over an empty cell). */
  async function tipAt(p) {
    const { page } = t
    await page.mouse.move(2, 2)
    await page.mouse.move(p.x, p.y)
    const tip = t.page.getByTestId('heatmap-tip')
    return until('a tooltip', async () => (await tip.count()) && (await tip.first().isVisible()) && (await tip.first().textContent()), 1_500, 100).catch(() => '')
  }
  /** A column where the tooltips at both buckets' rows name them: there are cells to press and release on. */
  async function column(rows, labels, a, b) {
    for (const across of [0.9, 0.8, 0.95, 0.7, 0.85, 0.75, 0.6, 0.65, 0.55, 0.5]) {
      const [p, q] = [await at(rows, a, across), await at(rows, b, across)]
      if ((await tipAt(p)).includes(`latency ${labels.get(a)}`) && (await tipAt(q)).includes(`latency ${labels.get(b)}`)) return [p, q]
    }
    throw new Error(`no column with cells in both bucket ${a} and bucket ${b}`)
  }
  async function drag(p, q, shift) {
    const { page } = t
    await page.mouse.move(p.x, p.y)
    if (shift) await page.keyboard.down('Shift')
    await page.mouse.down()
    await page.mouse.move(q.x, q.y, { steps: 6 })
    await page.mouse.up()
    if (shift) await page.keyboard.up('Shift')
  }

  let url
  let all // every bucket drawn before the zoom, lowest first
  let before // the side panel before the zoom
  let zoom // { lo, hi } exponents

  it('zooms the bucket axis to the buckets shift-dragged across', async () => {
    const { page, server } = t
    url = `${server.base}/?range=5m&paused=1&at=${Math.floor(Date.now() / 1000) - 5}&s=nfs.ops;by:latency;d:heatmap`
    await page.goto(url)
    await chart().waitFor()
    await until('the rate per band', async () => (await listed()).length > 3)
    all = await drawn()
    before = await listed()
    const labels = new Map(before.map((r) => [r.index, r.label]))
    // three buckets around the busiest one, each with events
    const busiest = before.reduce((a, b) => (b.rate > a.rate ? b : a)).index
    const withEvents = all.filter((e) => labels.has(e))
    const i = withEvents.indexOf(busiest)
    const from = withEvents[Math.max(0, Math.min(i - 1, withEvents.length - 3))]
    const to = withEvents[withEvents.indexOf(from) + 2]
    zoom = { lo: from, hi: to }
    const [p, q] = await column(all, labels, from, to)
    await drag(p, q, true)

    const want = bucketsIn(all, from, to)
    await until(`only buckets ${want} drawn`, async () => JSON.stringify(await drawn()) === JSON.stringify(want))
    assert.ok(want.length >= 3 && want.length < all.length, `${want} of ${all}`)
    assert.equal(params().get('s'), `nfs.ops;by:latency;d:heatmap;yz:${from}:${to}`)
    assert.match(await page.getByTestId('zoom-badge').textContent(), /^zoomed \S+ \S+ – \S+ \S+$/)
    assert.equal(await page.getByTestId('band-sum').count(), 0, 'a shift-drag zooms, it does not select')
    // the side panel lists the zoom's buckets with the rates they had, and what lies outside
    const inside = before.filter((r) => r.index >= from && r.index <= to)
    assert.deepEqual(await listed(), inside)
    const outside = before.reduce((s, r) => s + r.rate, 0) - inside.reduce((s, r) => s + r.rate, 0)
    assert.ok(outside > 0, 'the demo has events outside the zoom')
    const note = await page.getByTestId('zoom-note').textContent()
    assert.match(note, /^[\d,.]+ ops\/s outside the zoom not shown$/)
    assert.ok(Math.abs(rate(note) - outside) <= 0.01 * outside, `${note} vs ${outside}`)
    // the drawn rows are those buckets: hovering the lowest and the highest row names them
    await column(want, labels, from, to)
    await page.mouse.move(2, 2)
    await until('the tooltip gone', async () => !(await t.page.getByTestId('heatmap-tip').isVisible()), 3_000, 100)
    await t.shot('heatzoom-zoomed')
    assert.deepEqual(t.consoleErrors, [])
  })

  it('still selects a band with a drag and extends it with a shift-click, inside the zoom', async () => {
    const { page } = t
    const want = bucketsIn(all, zoom.lo, zoom.hi)
    const labels = new Map(before.map((r) => [r.index, r.label]))
    const withEvents = want.filter((e) => labels.has(e))
    const [low, high] = await column(want, labels, withEvents[0], withEvents[1])
    await drag(low, high, false)
    await until('a band selected', async () => (await page.getByTestId('band-sum').count()) === 1)
    assert.deepEqual((await listed()).filter((r) => r.selected).map((r) => r.index), [withEvents[1], withEvents[0]])
    const [, top] = await column(want, labels, withEvents[0], zoom.hi)
    await page.mouse.move(top.x, top.y)
    await page.keyboard.down('Shift')
    await page.mouse.down()
    await page.mouse.up()
    await page.keyboard.up('Shift')
    await until('the band extended', async () => (await listed()).filter((r) => r.selected).length === withEvents.length)
    assert.doesNotMatch(await page.getByTestId('band-sum').textContent(), /outside the zoom/)
    assert.equal(params().get('s'), `nfs.ops;by:latency;d:heatmap;yz:${zoom.lo}:${zoom.hi}`, 'the zoom is as it was')
    assert.deepEqual(await drawn(), want)
  })

  it('keeps the zoom through a reload, and "reset zoom" shows every bucket again', async () => {
    const { page } = t
    const badge = await page.getByTestId('zoom-badge').textContent()
    await page.reload()
    await chart().waitFor()
    const want = bucketsIn(all, zoom.lo, zoom.hi)
    await until('the zoom kept', async () => JSON.stringify(await drawn()) === JSON.stringify(want))
    assert.equal(await page.getByTestId('zoom-badge').textContent(), badge)
    assert.deepEqual(await listed(), before.filter((r) => r.index >= zoom.lo && r.index <= zoom.hi))
    await page.getByTestId('reset-zoom').click()
    await until('every bucket back', async () => JSON.stringify(await drawn()) === JSON.stringify(all))
    assert.deepEqual(await listed(), before)
    assert.equal(await page.getByTestId('zoom-badge').count(), 0)
    assert.equal(await page.getByTestId('zoom-note').count(), 0)
    assert.equal(params().get('s'), 'nfs.ops;by:latency;d:heatmap')
    await t.shot('heatzoom-reset')
    assert.deepEqual(t.consoleErrors, [])
  })

  it('zooms and resets from the keyboard', async () => {
    const { page } = t
    await page.getByTestId('band-lo').selectOption(String(zoom.lo))
    await page.getByTestId('band-hi').selectOption(String(zoom.hi))
    await page.getByTestId('zoom-band').focus()
    await page.keyboard.press('Enter')
    await until('zoomed by the button', async () => params().get('s')?.endsWith(`;yz:${zoom.lo}:${zoom.hi}`))
    assert.deepEqual(await drawn(), bucketsIn(all, zoom.lo, zoom.hi))
    // a band outside the zoom stays selectable: its rate and members, said to be outside
    const out = String(zoom.hi < all[all.length - 1] ? all[all.length - 1] : all[0])
    await page.getByTestId('band-lo').selectOption(out)
    await page.getByTestId('band-hi').selectOption(out)
    await page.getByTestId('show-members').focus()
    await page.keyboard.press('Enter')
    await until('the band outside the zoom', async () => (await page.getByTestId('band-sum').count()) === 1)
    assert.match(await page.getByTestId('band-sum').textContent(), / \(outside the zoom\)$/)
    await page.getByTestId('members-title').waitFor()
    assert.deepEqual(await drawn(), bucketsIn(all, zoom.lo, zoom.hi))
    await page.getByTestId('reset-zoom').focus()
    await page.keyboard.press('Enter')
    await until('every bucket back', async () => JSON.stringify(await drawn()) === JSON.stringify(all))
  })

  it('zooms what the crop kept, counting each hidden event once; says when a zoom has nothing, and names an unreadable one', async () => {
    const { page } = t
    // the zoom reaches to the top bucket; the 5 % crop hides the top of it
    const top = all[all.length - 1]
    await page.goto(`${url};crop:5;yz:${zoom.lo}:${top}`)
    await chart().waitFor()
    await until('the crop note', async () => (await page.getByTestId('crop-note').count()) === 1)
    const kept = await drawn()
    assert.ok(kept.length > 0 && kept[0] === bucketsIn(all, zoom.lo, top)[0], `${kept}`)
    assert.ok(kept[kept.length - 1] < top, `the crop hides the top bucket: ${kept}`)
    const shown = (await listed()).reduce((s, r) => s + r.rate, 0)
    const cropped = rate(await page.getByTestId('crop-note').textContent())
    const outside = zoom.lo > all[0] ? rate(await page.getByTestId('zoom-note').textContent()) : 0
    const total = before.reduce((s, r) => s + r.rate, 0)
    assert.ok(Math.abs(shown + cropped + outside - total) <= 0.01 * total, `${shown} + ${cropped} + ${outside} vs ${total}`)
    await t.shot('heatzoom-cropped')

    // a zoom with none of the buckets that have events says so, and offers every bucket
    await page.goto(`${url};yz:40:44`)
    await page.getByTestId('zoom-empty').waitFor()
    assert.match(await page.getByTestId('zoom-empty').textContent(), /^No bucket of \S+ \S+ – \S+ \S+ has events in this range\./)
    assert.deepEqual(await drawn(), [])
    await page.getByRole('button', { name: 'Show every bucket' }).click()
    await until('every bucket', async () => JSON.stringify(await drawn()) === JSON.stringify(all))
    assert.equal(params().get('s'), 'nfs.ops;by:latency;d:heatmap')

    await page.goto(`${url};yz:8-12`)
    await chart().waitFor()
    assert.match(await page.getByTestId('url-warnings').textContent(), /bucket zoom "8-12" of nfs\.ops is not LO:HI, two bucket exponents 0 to 63; showing every bucket/)
    await until('every bucket', async () => JSON.stringify(await drawn()) === JSON.stringify(all))
    assert.equal(await page.getByTestId('zoom-badge').count(), 0)
    assert.deepEqual(t.consoleErrors, [])
  })
  it('selects a band over a time span with a drag across columns, lists who was in it then, and drills into that span', async () => {
    const { page } = t
    const end0 = Number(new URL(url).searchParams.get('at'))
    await page.goto(url)
    await chart().waitFor()
    await until('the rate per band', async () => (await listed()).length > 3)
    const rows = await drawn()
    const labels = new Map((await listed()).map((r) => [r.index, r.label]))
    const withEvents = rows.filter((e) => labels.has(e))
    const asked = []
    const onRequest = (r) => r.url().includes('/api/v1/breakdown?') && asked.push(new URL(r.url()).searchParams)
    page.on('request', onRequest)
    // from 20 % to 70 % of the five minutes, across two buckets (press and release anywhere on the plot)
    await drag(await at(rows, withEvents[0], 0.2), await at(rows, withEvents[1], 0.7), false)
    await until('a band selected', async () => (await page.getByTestId('band-sum').count()) === 1)
    // the raster draws the band over the columns dragged across, from 20 % to 70 % of the plot
    const box = await chart().locator('canvas').first().boundingBox()
    const w = box.width - GRID.left - GRID.right
    const band = () => page.locator('canvas.hm-raster').getAttribute('data-band')
    await until('the band drawn', async () => Boolean(await band()))
    const [x0, , bw] = (await band()).split(',').map(Number)
    const near = (x, frac) => Math.abs((x - GRID.left) / w - frac) < 0.03
    assert.ok(near(x0, 0.2) && near(x0 + bw, 0.7), `band from ${x0} to ${x0 + bw} px on a plot from ${GRID.left} px, ${w} px wide`)
    assert.match(await chart().getAttribute('aria-label'), /, band .+ selected from \d{4}-\d\d-\d\d \d\d:\d\d:\d\d to \d\d:\d\d:\d\d/)
    await page.getByTestId('member-row').first().waitFor()
    page.off('request', onRequest)
    const title = await page.getByTestId('members-title').textContent()
    assert.match(title, / by client from \d{4}-\d\d-\d\d \d\d:\d\d:\d\d to \d\d:\d\d:\d\d$/)
    const q = asked.at(-1)
    const [start, end] = [Number(q.get('start')), Number(q.get('end'))]
    assert.ok(start >= end0 - 300 && end <= end0 + 1 && end - start >= 100 && end - start <= 200, `${start}..${end} of ${end0 - 300}..${end0}`)
    assert.match(q.get('where'), new RegExp(`latency=${withEvents[0]}:${withEvents[1]}`))
    await t.shot('heatzoom-span')
    // a member drilled into opens on that span: its own time, paused at the span's end
    await page.getByTestId('member-row').first().click()
    await page.getByTestId('drill-menu').locator('button.menu-item[data-testid^="drill-"]:not([data-testid="drill-diagnose"])').first().click()
    await until('a second chart', async () => params().getAll('s').length === 2)
    const drilled = params().getAll('s')[1]
    assert.match(drilled, new RegExp(`;t:(\\d+[smhdw])@${end}$`), drilled)
  })
})
