// Client names: an admin names the demo NAS's clients in the mapping table (a bad row is refused
// by name first); the legend, the chart's tooltip, the drill menu, a heat map's members, a chart
// title and the client page then show the names, with the address on hover, and drilling into a
// named client still filters by its address.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { authedFetch, demoInBrowser, setupProblem, until } from './server.mjs'

const skip = setupProblem()
if (skip) it(`end-to-end client names (skipped: ${skip})`, { skip }, () => {})

const CLIENTS = 20 // the demo NAS's default: 10.0.0.1 .. 10.0.0.20
const address = (i) => `10.0.0.${i + 1}`
const nameOf = (i) => `ws-${i + 1}.lab`

describe('Loupe client names in Chromium', { skip: skip ?? false }, () => {
  const t = demoInBrowser({ backfill: 60 })

  it('an admin names the clients in the mapping table; a bad row is refused by name', async () => {
    const { page, server } = t
    await page.goto(`${server.base}/admin`)
    const section = page.getByTestId('admin-client-names')
    const policy = section.getByTestId('names-policy')
    await policy.waitFor()
    assert.equal(await policy.getAttribute('data-order'), 'table,hosts') // the default: no DNS unless asked for
    const row = (i) => section.getByTestId('names-row').nth(i)
    await row(0).getByTestId('names-address').fill(address(0))
    await row(0).getByTestId('names-name').fill(nameOf(0))
    await row(1).getByTestId('names-address').fill('10.0.0.300')
    await row(1).getByTestId('names-name').fill('bad')
    await section.getByTestId('names-save').click()
    const error = section.getByTestId('admin-error')
    await error.waitFor()
    assert.match(await error.textContent(), /entries\.1\.address: .*'10\.0\.0\.300' is not an IPv4 or IPv6 address/)
    assert.match(await row(1).getAttribute('class'), /row-bad/)
    assert.equal(await row(1).getByTestId('names-address').getAttribute('aria-invalid'), 'true')
    const table = async () => (await (await authedFetch(`${server.base}/api/v1/client-names`)).json()).entries
    assert.deepEqual(await table(), []) // nothing saved
    // the refused save is the one failed request the browser saw
    assert.deepEqual(t.consoleErrors.splice(0), ['Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)'])

    for (let i = 1; i < CLIENTS; i++) {
      await row(i).getByTestId('names-address').fill(address(i))
      await row(i).getByTestId('names-name').fill(nameOf(i))
    }
    assert.equal(await section.getByTestId('names-save').textContent(), `Save ${CLIENTS} names`)
    await section.getByTestId('names-save').click()
    await until('the table saved', async () => (await table()).length === CLIENTS)
    assert.deepEqual((await table())[0], { address: '10.0.0.1', name: 'ws-1.lab' })
    await until('the editor re-read', async () => /saved by admin/.test(await section.getByTestId('names-origin').textContent()))
    assert.equal(await section.getByTestId('admin-error').count(), 0)
    const audit = page.locator('[data-testid="audit-row"][data-action="client_names.set"]')
    await until('the save in the audit log', async () => (await audit.count()) === 1)
    assert.match(await audit.textContent(), /20 entries: 20 added, 0 removed, 0 renamed/)
    await t.shot('names-admin')
    assert.deepEqual(t.consoleErrors, [])
  })

  it('the legend and the tooltip show the names, the address on hover; search finds either', async () => {
    const { page, server } = t
    await page.goto(`${server.base}/?range=10m&paused=1&s=nfs.ops;by:client;top:20`)
    const rows = page.getByTestId('legend-row')
    await until('20 clients in the legend', async () => (await rows.count()) === CLIENTS)
    const legend = await rows.evaluateAll((rs) =>
      rs.map((r) => {
        const label = r.querySelector('[data-testid="legend-label"]')
        return { key: r.dataset.key, text: label.textContent, hover: label.title }
      }),
    )
    for (const { key, text, hover } of legend) {
      const i = Number(key.split('.')[3]) - 1
      assert.deepEqual({ text, hover }, { text: nameOf(i), hover: `${nameOf(i)} (${key})` }, key)
    }
    // the chart's tooltip names each client with its address
    const chart = page.getByTestId('timeseries-chart')
    const box = await chart.boundingBox()
    // near the right edge: the demo's newest seconds
    await page.mouse.move(box.x + box.width * 0.9, box.y + box.height * 0.5)
    await page.mouse.move(box.x + box.width * 0.95, box.y + box.height * 0.5)
    const tip = chart.locator('div[style*="z-index: 9999999"]').first()
    await until('the tooltip', async () => (await tip.count()) > 0 && (await tip.isVisible()))
    const text = await tip.textContent()
    assert.ok(text.includes('ws-1.lab (10.0.0.1)') && text.includes('ws-20.lab (10.0.0.20)'), text)
    // hovering a legend entry: its title is the name with the address
    const one = page.locator('[data-testid="legend-row"][data-key="10.0.0.1"] [data-testid="legend-label"]')
    await one.hover()
    assert.equal(await one.getAttribute('title'), 'ws-1.lab (10.0.0.1)')
    await page.mouse.move(box.x + box.width * 0.95, box.y + box.height * 0.5)
    await until('the tooltip again', async () => await tip.isVisible())
    await t.shot('names-legend')

    const search = page.getByTestId('legend-search')
    await search.fill('ws-2.')
    await until('one by name', async () => (await rows.count()) === 1)
    assert.equal(await rows.first().getAttribute('data-key'), '10.0.0.2')
    await search.fill('10.0.0.2')
    await until('by address', async () => (await rows.count()) === 2) // 10.0.0.2 and 10.0.0.20
    await search.fill('')
    assert.deepEqual(t.consoleErrors, [])
  })

  it('drilling into a named client filters by its address', async () => {
    const { page, server } = t
    await page.goto(`${server.base}/?range=10m&paused=1&s=nfs.ops;by:client;top:20`)
    const row = page.locator('[data-testid="legend-row"][data-key="10.0.0.3"]')
    await row.waitFor()
    await row.click()
    const menu = page.getByTestId('drill-menu')
    await menu.waitFor()
    assert.match(await menu.textContent(), /client ws-3\.lab 10\.0\.0\.3/)
    assert.equal(await menu.getAttribute('aria-label'), 'Drill down into ws-3.lab (10.0.0.3)')
    await t.shot('names-drill-menu')
    await page.getByTestId('drill-file').click()
    const card = page.locator('[data-testid="chart-card"]').nth(1)
    const title = card.getByTestId('chart-title')
    await until('the new chart named', async () => (await title.textContent()) === 'NFS operations per second for client ws-3.lab broken down by file')
    assert.equal(await title.getAttribute('title'), 'NFS operations per second for client 10.0.0.3 broken down by file')
    const drilled = new URL(page.url()).searchParams.getAll('s')[1]
    assert.ok(drilled.startsWith('nfs.ops;by:file;') && drilled.endsWith(';w:client=10.0.0.3'), page.url())
    // the filter is the address: the client's files are there
    await until('its files', async () => (await card.getByTestId('legend-row').count()) > 0)
    const files = await card.getByTestId('legend-label').allTextContents()
    assert.ok(files.some((f) => f.startsWith('/')), files.join())

    // and "Why is this client slow?" opens the page of the address, headed by the name
    await row.click()
    await page.getByTestId('drill-diagnose').click()
    await page.getByTestId('client-page').waitFor()
    assert.match(page.url(), /\/clients\?client=10\.0\.0\.3(&|$)/)
    const name = page.getByTestId('client-name')
    await until('the name in the heading', async () => (await name.textContent()) === 'ws-3.lab')
    assert.equal(await name.getAttribute('title'), '10.0.0.3')
    assert.equal((await page.getByTestId('client-address').textContent()).trim(), '(10.0.0.3)')
    await page.getByTestId('client-verdict').waitFor()
    await t.shot('names-client-page')
    assert.deepEqual(t.consoleErrors, [])
  })

  it('the members of a heat-map band are named', async () => {
    const { page, server } = t
    await page.goto(`${server.base}/?range=10m&paused=1&s=nfs.ops;by:latency;d:heatmap`)
    await page.getByTestId('band-form').waitFor()
    await page.getByTestId('show-members').click() // the whole range of buckets, by client
    const members = page.getByTestId('member-row')
    await until('members', async () => (await members.count()) > 0)
    const shown = await members.evaluateAll((rs) => rs.map((r) => [r.dataset.key, r.querySelector('.legend-label').textContent, r.querySelector('.legend-label').title]))
    for (const [key, text, hover] of shown) {
      const i = Number(key.split('.')[3]) - 1
      assert.deepEqual([text, hover], [nameOf(i), `${nameOf(i)} (${key})`])
    }
    assert.deepEqual(t.consoleErrors, [])
  })
})
