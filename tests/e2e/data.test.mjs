// An admin keeps less history and deletes the demo NAS's statistics from the admin page: the
// retention is stored and applied, a delete is counted before it is done, only the chosen host
// loses data, and both land in the audit log.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { authedFetch, demoInBrowser, setupProblem, until } from './server.mjs'

const skip = setupProblem()
if (skip) it(`end-to-end retention and deletion (skipped: ${skip})`, { skip }, () => {})

async function total(base, metric, host, start, end) {
  const q = await (await authedFetch(`${base}/api/v1/query?metric=${metric}&where=host=${host}&start=${start}&end=${end}&step=1`)).json()
  return q.total.reduce((a, b) => a + b, 0)
}

describe('Loupe data administration in Chromium', { skip: skip ?? false }, () => {
  const t = demoInBrowser({ backfill: 60 })

  it('sets retention and deletes one host\'s statistics, counted first', async () => {
    const { page, server } = t
    const dialogs = []
    page.on('dialog', (d) => (dialogs.push(d.message()), d.accept()))
    await page.goto(`${server.base}/admin`)
    const second = page.locator('[data-testid="retention-tier"][data-tier="second"]')
    await second.waitFor()
    assert.equal(await second.getAttribute('data-keep'), '172800')
    assert.match(await page.getByTestId('retention-origin').textContent(), /configured default/)
    // keep seconds for 24 hours instead of 2 days: shorter, so the page asks first
    await page.getByTestId('retention-second').fill('24')
    await page.getByTestId('retention-second-unit').selectOption('hours')
    await page.getByTestId('retention-save').click()
    await until('the retention saved', async () => (await second.getAttribute('data-keep')) === '86400')
    assert.match(dialogs[0], /This deletes seconds older than 1 day at once/)
    assert.match(await page.getByTestId('retention-origin').textContent(), /set by admin/)
    assert.match(await page.getByTestId('retention-pruned').textContent(), /^; the change removed [\d,]+ rows$/)
    const r = await (await authedFetch(`${server.base}/api/v1/retention`)).json()
    assert.deepEqual([r.second, r.minute, r.hour, r.set_by], [86400, 30 * 86400, 365 * 86400, 'admin'])

    // the demo NAS's statistics: counted, then deleted; this machine's own stay
    const hosts = (await (await authedFetch(`${server.base}/api/v1/status`)).json()).hosts
    const local = hosts.find((h) => h !== 'demo-nas')
    assert.ok(hosts.includes('demo-nas') && local, hosts.join())
    await page.getByTestId('delete-host').selectOption('demo-nas')
    assert.equal(await page.getByTestId('delete-submit').isDisabled(), true) // nothing counted yet
    await page.getByTestId('delete-count').click()
    const counted = page.getByTestId('delete-counted')
    await counted.waitFor()
    assert.ok(Number(await counted.getAttribute('data-rows')) > 0)
    assert.match(await counted.textContent(), /Would delete [\d,]+ rows of seconds/)
    // this machine's agent began with the server: wait for a few seconds of its CPU statistics
    await until(`${local}'s CPU statistics`, async () => (await total(server.base, 'cpu.util', local, '-30s', '-3s')) > 0)
    const before = Math.floor(Date.now() / 1000)
    assert.ok((await total(server.base, 'nfs.ops', 'demo-nas', before - 50, before - 3)) > 0)
    const localBefore = await total(server.base, 'cpu.util', local, before - 50, before - 3)
    await page.getByTestId('delete-submit').click()
    const done = page.getByTestId('delete-done')
    await done.waitFor()
    assert.match(dialogs.at(-1), /^Delete [\d,]+ rows: all of demo-nas's statistics\? This cannot be undone\.$/)
    assert.match(await done.textContent(), /Deleted [\d,]+ rows \(all of demo-nas's statistics\)/)
    // gone up to the delete (the demo NAS goes on sending after it), and the other host untouched
    assert.equal(await total(server.base, 'nfs.ops', 'demo-nas', before - 50, before - 3), 0)
    assert.equal(await total(server.base, 'cpu.util', local, before - 50, before - 3), localBefore)
    const deleted = page.locator('[data-testid="audit-row"][data-action="data.delete"]')
    await until('the delete in the audit log', async () => (await deleted.count()) === 1)
    assert.match(await deleted.textContent(), /demo-nas/)
    assert.equal(await page.locator('[data-testid="audit-row"][data-action="retention.set"]').count(), 1)
    await t.shot('admin-data')
    assert.deepEqual(t.consoleErrors, [])
  })
})
