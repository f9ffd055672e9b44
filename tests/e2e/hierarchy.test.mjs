// The hierarchy of a by-file chart on the demo NAS (its files live under /export/<share>/...):
// show it, check the directories and their rates against the API, click a directory in the
// treemap to filter the chart to it, go back up by the breadcrumb, switch to a sunburst, and
// remove the filter by its chip.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { authedFetch, demoInBrowser, setupProblem, until } from './server.mjs'

const skip = setupProblem()
if (skip) it(`end-to-end hierarchy (skipped: ${skip})`, { skip }, () => {})

const SHARES = ['/export/bench', '/export/db', '/export/home', '/export/media', '/export/scratch']

describe('Loupe hierarchy in Chromium', { skip: skip ?? false }, () => {
  const t = demoInBrowser({}, { width: 1280, height: 800 })
  const params = () => new URL(t.page.url()).searchParams
  // a paused minute, so the page and the API read the very same window (set once the demo has filled it)
  let at = 0
  const api = async (path, query) => {
    const r = await authedFetch(`${t.server.base}/api/v1/${path}?${new URLSearchParams(query)}`)
    assert.equal(r.status, 200, await r.clone().text())
    return r.json()
  }
  const tree = (where = []) =>
    api('hierarchy', [['metric', 'nfs.ops'], ['by', 'file'], ['start', String(at - 60)], ['end', String(at)], ['depth', '3'], ['top', '10'], ...where.map((w) => ['where', w])])
  const listed = async () =>
    Promise.all(
      (await t.page.getByTestId('hierarchy-list').locator('tr').all()).map(async (r) => [await r.getAttribute('data-name'), Number(await r.getAttribute('data-value'))]),
    )
  const shownRoot = () => t.page.getByTestId('hierarchy').getAttribute('data-root')

  it('shows the directory tree of a by-file chart with the rates the API gives', async () => {
    const { page, server } = t
    // a second's rows may come in several frames: wait until the minute reads the same twice, a second apart
    at = Math.floor(Date.now() / 1000) - 5
    let before = null
    await until('every second of the paused minute stored', async () => {
      const q = await api('query', { metric: 'nfs.ops', start: String(at - 60), end: String(at), step: '1' })
      const now = q.total.join()
      const done = q.total.length === 60 && q.total.every((v) => v > 0) && now === before
      before = now
      return done
    }, 30_000, 1_000)
    await page.goto(`${server.base}/?range=1m&paused=1&at=${at}&s=nfs.ops;by:file`)
    await page.getByTestId('timeseries-chart').waitFor()
    const button = page.getByTestId('show-hierarchy')
    assert.equal(await button.getAttribute('aria-pressed'), 'false')
    await button.click()
    await page.getByTestId('hierarchy-chart').waitFor()
    assert.match(params().get('s'), /;h:treemap/)
    assert.equal(await button.textContent(), 'Hide hierarchy')

    const top = await tree()
    assert.equal(top.root, '/')
    assert.deepEqual(top.tree.children.map((c) => c.path), ['/export'])
    const got = await listed()
    assert.deepEqual(got, top.tree.children.map((c) => [c.name, c.value]), JSON.stringify([got, top.tree.children.map((c) => [c.name, c.value]), top.start, top.end]))
    assert.match(await page.getByTestId('hierarchy-chart').getAttribute('aria-label'), /^treemap of file under \/, .* in all: export /)

    // down into /export from the list (the keyboard's way): its children are the five shares
    await page.getByTestId('hierarchy-list').getByRole('button', { name: 'export' }).click()
    await until('the tree rooted at /export', async () => (await shownRoot()) === '/export')
    const exp = await tree(['file^=/export'])
    assert.deepEqual(exp.tree.children.map((c) => c.path).sort(), SHARES)
    const want = JSON.stringify(exp.tree.children.map((c) => [c.name, c.value]))
    await until('the list of /export', async () => JSON.stringify(await listed()) === want).catch(async (e) => {
      throw new Error(`${e.message}: ${JSON.stringify(await listed())} vs ${want}`)
    })
    // each share's rate agrees with a breakdown by share over the same minute (another path through the store)
    const byShare = await api('breakdown', { metric: 'nfs.ops', by: 'share', start: String(at - 60), end: String(at), top: '10' })
    for (const c of exp.tree.children) {
      const row = byShare.rows.find((r) => r.key === c.path)
      assert.ok(Math.abs(row.value - c.value) < 1e-6 * row.value, `${c.path}: ${c.value} vs ${row.value}`)
    }
    const label = await page.getByTestId('hierarchy-chart').getAttribute('aria-label')
    for (const c of exp.tree.children) assert.ok(label.includes(` ${c.name} `), `${c.name} in "${label}"`)
    assert.equal(await page.getByTestId('filter-chip').textContent(), 'file under /export✕')
    await t.shot('hierarchy-treemap')
  })

  it('filters the chart to a directory clicked in the treemap, and goes back up', async () => {
    const { page } = t
    const exp = await tree(['file^=/export'])
    const biggest = exp.tree.children[0]
    // the largest directory is laid out first, at the top left: click its label band
    const box = await page.getByTestId('hierarchy-chart').locator('canvas').first().boundingBox()
    await page.mouse.click(box.x + 30, box.y + 8)
    await until(`the tree rooted at ${biggest.path}`, async () => (await shownRoot()) === biggest.path)
    assert.ok(t.page.url().includes(`;w:file%5E=${encodeURIComponent(biggest.path)}`), t.page.url())
    assert.equal(await page.getByTestId('filter-chip').textContent(), `file under ${biggest.path}✕`)
    const card = page.getByTestId('chart-card')
    await until('the chart title naming the directory', async () =>
      (await card.getByTestId('chart-title').textContent()) === `NFS operations per second for file under ${biggest.path} broken down by file`)
    // the chart shows only files under it, and the re-rooted tree is the API's for that filter
    await until('the legend of files under the directory', async () => {
      const keys = (await card.getByTestId('legend-row').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-key')))).filter((k) => k !== 'other')
      return keys.length > 0 && keys.every((k) => k.startsWith(`${biggest.path}/`) || k === biggest.path)
    })
    const sub = await tree([`file^=${biggest.path}`])
    assert.equal(sub.root, biggest.path)
    assert.ok(Math.abs(sub.total - biggest.value) < 1e-6 * biggest.value, `${sub.total} vs ${biggest.value}`)
    await until('the list of the directory', async () => JSON.stringify(await listed()) === JSON.stringify(sub.tree.children.map((c) => [c.name, c.value])))
    const crumbs = await page.getByTestId('hierarchy-crumbs').getByRole('button').allTextContents()
    assert.deepEqual(crumbs, ['/', 'export', biggest.name])
    assert.equal(await page.getByTestId('hierarchy-crumbs').locator('[aria-current="location"]').textContent(), biggest.name)
    await t.shot('hierarchy-rerooted')

    // the breadcrumb goes back up: to /export, then to the top, where the filter is gone
    await page.getByTestId('hierarchy-crumbs').getByRole('button', { name: 'export' }).click()
    await until('the tree rooted at /export again', async () => (await shownRoot()) === '/export')
    assert.equal(await page.getByTestId('filter-chip').textContent(), 'file under /export✕')
    await page.getByTestId('hierarchy-crumbs').getByRole('button', { name: '/' }).click()
    await until('the top again', async () => (await shownRoot()) === '/')
    assert.equal(await page.getByTestId('filter-chip').count(), 0)
    assert.doesNotMatch(params().get('s'), /w:/)
  })

  it('draws a sunburst, and a chip removes the filter', async () => {
    const { page } = t
    await page.getByRole('group', { name: 'Hierarchy style' }).getByRole('button', { name: 'Sunburst' }).click()
    await until('the sunburst in the URL', async () => /;h:sunburst/.test(params().get('s')))
    await until('the sunburst drawn', async () => /^sunburst of file under \//.test(await page.getByTestId('hierarchy-chart').getAttribute('aria-label')))
    await page.getByTestId('hierarchy-list').getByRole('button', { name: 'export' }).click()
    await until('the sunburst rooted at /export', async () => (await shownRoot()) === '/export')
    await t.shot('hierarchy-sunburst')
    await page.getByRole('button', { name: 'Remove filter: file under /export' }).click()
    await until('the filter removed', async () => (await shownRoot()) === '/')
    assert.doesNotMatch(params().get('s'), /w:/)
    // hiding the hierarchy leaves the chart as it was
    await page.getByTestId('show-hierarchy').click()
    await until('the hierarchy hidden', async () => !/;h:/.test(params().get('s')))
    assert.equal(await page.getByTestId('hierarchy').count(), 0)
    assert.deepEqual(t.consoleErrors, [])
  })
})
