// The light and dark themes, and the layout at 1280x800, on the demo NAS in Chromium: the header's
// theme choice changes the page and what the charts draw (read back from their canvas), holds
// across a reload from the first paint on, follows the system when asked to; and each main page
// fits 1280 pixels with its controls in view.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { demoInBrowser, setupProblem, signIn, until } from './server.mjs'

const skip = setupProblem()
if (skip) it(`end-to-end themes and layout (skipped: ${skip})`, { skip }, () => {})

const WORKSHEET = '/?s=nfs.ops;by:client&s=nfs.ops;by:latency;d:heatmap'

/** [r, g, b] of a CSS colour as the browser computes it ("rgb(1, 2, 3)"). */
const rgb = (css) => css.match(/\d+(\.\d+)?/g).slice(0, 3).map(Number)
const luminance = ([r, g, b]) => (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255
const near = (a, b, tol = 24) => a.every((x, i) => Math.abs(x - b[i]) <= tol)

describe('Loupe themes and layout in Chromium', { skip: skip ?? false }, () => {
  const t = demoInBrowser({ backfill: 120 }, { width: 1280, height: 800 })

  /** The page's theme, its background and the colour the charts' axis text should have. */
  const look = () =>
    t.page.evaluate(() => {
      const root = getComputedStyle(document.documentElement)
      // what --chart-text computes to, as rgb()
      const probe = document.createElement('span')
      probe.style.color = 'var(--chart-text)'
      document.body.append(probe)
      const chartText = getComputedStyle(probe).color
      probe.remove()
      return { theme: document.documentElement.dataset.theme, background: root.backgroundColor, chartText }
    })

  /**
   * The colour of the time series chart's axis labels as drawn: the opaque pixels left of the
   * plot (the value axis' labels; the chart's own background is transparent), median by
   * brightness. Null when nothing is drawn there yet.
   */
  const axisLabelColor = () =>
    t.page.getByTestId('timeseries-chart').first().evaluate((el) => {
      const canvas = el.querySelector('canvas')
      const ratio = canvas.width / el.clientWidth
      const img = canvas.getContext('2d').getImageData(0, 0, Math.floor(50 * ratio), canvas.height).data
      const ink = []
      for (let i = 0; i < img.length; i += 4) if (img[i + 3] === 255) ink.push([img[i], img[i + 1], img[i + 2]])
      if (ink.length < 10) return null
      ink.sort((a, b) => a[0] + a[1] + a[2] - (b[0] + b[1] + b[2]))
      return ink[Math.floor(ink.length / 2)]
    })

  it('switches between light and dark from the header, and the charts follow without losing their state', async () => {
    const { page, server } = t
    await page.emulateMedia({ colorScheme: 'light' })
    await page.goto(server.base + WORKSHEET)
    await page.getByTestId('timeseries-chart').waitFor()
    await page.getByTestId('heatmap-chart').waitFor()
    const select = page.getByTestId('theme-select')
    assert.equal(await select.inputValue(), 'system') // nothing chosen yet: as the system is
    const light = await look()
    assert.equal(light.theme, 'light')
    assert.ok(luminance(rgb(light.background)) > 0.85, light.background)
    await until('axis labels drawn in the light chart text colour', async () => near((await axisLabelColor()) ?? [-99, 0, 0], rgb(light.chartText)))
    // state the charts keep themselves: a chart taken out of the shared crosshair
    await page.getByTestId('unsync-chart').first().click()
    await t.shot('theme-worksheet-light')

    await select.selectOption('dark')
    await until('the dark theme', async () => (await look()).theme === 'dark')
    const dark = await look()
    assert.ok(luminance(rgb(dark.background)) < 0.1, dark.background)
    assert.notDeepEqual(rgb(dark.chartText), rgb(light.chartText))
    await until('axis labels redrawn in the dark chart text colour', async () => near((await axisLabelColor()) ?? [-99, 0, 0], rgb(dark.chartText)))
    assert.ok(luminance(await axisLabelColor()) > luminance(rgb(dark.background)) + 0.3, 'light text on the dark card')
    assert.equal(await page.getByTestId('unsync-chart').first().textContent(), 'unsynced', 'the chart kept its state')
    assert.equal(await page.getByTestId('chart-card').count(), 2)
    assert.match(await page.getByTestId('chart-card').nth(1).locator('footer').textContent(), /colour on a log scale \(brighter is more\)/)
    await t.shot('theme-worksheet-dark')
    assert.deepEqual(t.consoleErrors, [])
  })

  it('keeps the choice across a reload, dark from the first paint, before the app has run', async () => {
    const { page, server } = t
    let release
    const held = new Promise((r) => (release = r))
    const bundle = /\/assets\/[^/]+\.js$/
    await page.route(bundle, async (route) => {
      await held
      await route.continue()
    })
    try {
      await page.goto(server.base + WORKSHEET, { waitUntil: 'commit' })
      const early = await until('the stylesheet applied', async () => {
        const s = await page.evaluate(() => ({
          theme: document.documentElement.dataset.theme,
          background: getComputedStyle(document.documentElement).backgroundColor,
          app: document.getElementById('root')?.childElementCount ?? -1,
        }))
        return s.background !== 'rgba(0, 0, 0, 0)' && s.app >= 0 ? s : null
      })
      assert.equal(early.app, 0, 'the app has not rendered yet')
      assert.equal(early.theme, 'dark')
      assert.ok(luminance(rgb(early.background)) < 0.1, early.background)
    } finally {
      release()
    }
    await page.getByTestId('timeseries-chart').waitFor()
    await page.unroute(bundle) // the held requests have been let through by now
    assert.equal(await page.getByTestId('theme-select').inputValue(), 'dark')
    const dark = await look()
    await until('a dark chart after the reload', async () => near((await axisLabelColor()) ?? [-99, 0, 0], rgb(dark.chartText)))
    assert.deepEqual(t.consoleErrors, [])
  })

  it('follows the system when asked to, and a fixed choice does not', async () => {
    const { page } = t
    await page.emulateMedia({ colorScheme: 'light' })
    assert.equal((await look()).theme, 'dark') // chosen: dark, whatever the system says
    await page.getByTestId('theme-select').selectOption('system')
    await until('light, as the system is', async () => (await look()).theme === 'light')
    await page.emulateMedia({ colorScheme: 'dark' })
    await until('dark as soon as the system is', async () => (await look()).theme === 'dark')
    await page.reload()
    await page.getByTestId('theme-select').waitFor()
    assert.equal(await page.getByTestId('theme-select').inputValue(), 'system')
    assert.equal((await look()).theme, 'dark')
    await page.getByTestId('theme-select').selectOption('light')
    await page.emulateMedia({ colorScheme: 'light' })
    assert.deepEqual(t.consoleErrors, [])
  })

  const PAGES = [
    ['worksheet', 'worksheet with two charts, one on its own time', `${WORKSHEET};t:1h`, ['timeseries-chart', 'heatmap-chart', 'chart-time']],
    ['status', 'status', '/status', ['status-tiles']],
    ['sources', 'sources', '/sources', ['sources-page']],
    ['runs', 'runs', '/runs', ['runs-page']],
    ['admin', 'admin', '/admin', ['admin-page']],
    ['client', "a client's diagnosis", '/clients?client=10.0.0.7', ['client-verdict']],
  ]
  it('opens an alert, so that the header is as full as it gets (its count beside Alerts)', async () => {
    const { page, server } = t
    const { csrf_token: csrf } = await signIn(page, server)
    const r = await page.request.post(`${server.base}/api/v1/alerts`, {
      headers: { 'X-CSRF-Token': csrf },
      data: { name: 'layout', metric: 'nfs.ops', condition: 'above', threshold: 1, hold_s: 1 },
    })
    assert.equal(r.status(), 201, await r.text())
    await page.goto(`${server.base}/status`)
    await until('the open alert counted in the header', async () => (await page.getByTestId('nav-alerts-open').count()) === 1, 20_000)
  })
  for (const [name, what, path, ready] of PAGES) {
    it(`fits 1280x800 with every control in view: ${what}`, async () => {
      const { page, server } = t
      assert.deepEqual(page.viewportSize(), { width: 1280, height: 800 })
      await page.goto(server.base + path)
      for (const id of ready) await page.getByTestId(id).first().waitFor()
      await page.waitForTimeout(500) // charts and tables settle their size
      const width = await page.evaluate(() => document.scrollingElement.scrollWidth)
      assert.ok(width <= 1280, `the page is ${width} px wide`)
      // The header's and the worksheet toolbar's controls: each shown whole in the first screen.
      // Every other control of the page that is shown: whole inside the window's width.
      const bar = 'header :is(button, select, a), [data-testid="toolbar"] :is(button, select, input:not([type="file"]))'
      const boxes = await page.evaluate((bar) => {
        const inBar = new Set(document.querySelectorAll(bar))
        return [...document.querySelectorAll('header :is(button, select, a), main :is(button, select, input, textarea, a)')].map((el) => {
          const r = el.getBoundingClientRect()
          const style = getComputedStyle(el)
          const shown = r.width > 0 && r.height > 0 && style.visibility !== 'hidden'
          return { label: el.getAttribute('aria-label') || el.textContent.trim() || el.getAttribute('placeholder') || el.tagName, bar: inBar.has(el), shown, left: r.left, right: r.right, bottom: r.bottom }
        })
      }, bar)
      const barBoxes = boxes.filter((b) => b.bar)
      assert.ok(barBoxes.length >= (name === 'worksheet' ? 25 : 8), `${barBoxes.length} controls in the header and toolbar`)
      assert.deepEqual(barBoxes.filter((b) => !b.shown || b.left < 0 || b.right > 1280 || b.bottom > 800).map((b) => b.label), [], 'header or toolbar controls hidden or cut off')
      assert.deepEqual(boxes.filter((b) => b.shown && (b.left < 0 || b.right > 1280)).map((b) => b.label), [], 'controls cut off at the sides')
      // the header stays one line: no control of it wraps its words (Sources, Sign out) or grows past it
      const header = await page.evaluate(() => {
        const h = document.querySelector('header.header').getBoundingClientRect()
        return [...document.querySelectorAll('header.header :is(button, select, .user-name, .badge)')]
          .filter((el) => { const r = el.getBoundingClientRect(); return r.height > 32 || r.top < h.top || r.bottom > h.bottom || el.scrollWidth > el.clientWidth + 1 })
          .map((el) => el.textContent.trim() || el.tagName)
      })
      assert.deepEqual(header, [], 'header controls on more than one line')
      await t.shot(`layout-1280-${name}`)
      assert.deepEqual(t.consoleErrors, [])
    })
  }
})
