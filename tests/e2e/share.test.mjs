// An admin shares a worksheet frozen at a moment; a viewer opens the link in a browser of her own
// and sees the same charts and range, read-only; "Edit a copy" gives her the controls back on a
// copy that cannot overwrite the admin's saved worksheet.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { join } from 'node:path'
import { demoInBrowser, repoRoot, setupProblem, signIn } from './server.mjs'

const skip = setupProblem()
if (skip) it(`end-to-end share links (skipped: ${skip})`, { skip }, () => {})

describe('Loupe share links in Chromium', { skip: skip ?? false }, () => {
  const t = demoInBrowser({ backfill: 60 })

  it('opens a shared view read-only for a viewer, frozen where it was shared', async () => {
    const { page, server } = t
    const { csrf_token: csrf } = await signIn(page, server)
    const r = await page.request.post(`${server.base}/api/v1/users`, {
      headers: { 'X-CSRF-Token': csrf },
      data: { name: 'vera', role: 'viewer', password: 'vera-password' },
    })
    assert.equal(r.status(), 201, await r.text())

    await page.goto(`${server.base}/?s=nfs.ops;by:client&s=nfs.ops;by:latency;d:heatmap`)
    await page.getByTestId('chart-card').nth(1).waitFor()
    await page.getByTestId('share-button').click()
    assert.equal(await page.getByTestId('share-freeze').isChecked(), true) // a live view is frozen by default
    const link = await page.getByTestId('share-link').inputValue()
    const url = new URL(link)
    assert.equal(url.origin, server.base)
    assert.equal(url.searchParams.get('ro'), '1')
    assert.equal(url.searchParams.get('paused'), '1')
    const at = Number(url.searchParams.get('at'))
    assert.ok(Math.abs(at - Date.now() / 1000) < 30, `frozen at ${at}`)
    assert.deepEqual(url.searchParams.getAll('s'), ['nfs.ops;by:client', 'nfs.ops;by:latency;d:heatmap'])
    // unfrozen, it stays live
    await page.getByTestId('share-freeze').uncheck()
    assert.equal(new URL(await page.getByTestId('share-link').inputValue()).searchParams.get('paused'), null)
    await t.shot('share-dialog')

    const context = await t.browser.newContext({ viewport: { width: 1280, height: 900 } })
    try {
      const viewer = await context.newPage()
      const errors = []
      viewer.on('pageerror', (e) => errors.push(String(e)))
      await signIn(viewer, server, 'vera', 'vera-password')
      await viewer.goto(link)
      await viewer.getByTestId('read-only').waitFor()
      assert.match(await viewer.getByTestId('read-only').textContent(), /A shared view, read-only, frozen at the moment it was shared/)
      const titles = viewer.getByTestId('chart-title')
      await titles.nth(1).waitFor()
      await viewer.waitForFunction(() => [...document.querySelectorAll('[data-testid="chart-title"]')].every((e) => !e.textContent.endsWith('…')))
      assert.deepEqual(await titles.allTextContents(), ['NFS operations per second broken down by client', 'NFS operations per second broken down by latency'])
      // the frozen range: the chart's newest point is the shared moment
      const last = viewer.getByTestId('last-ts').first()
      const clock = new Date((at - 1) * 1000).toTimeString().slice(0, 8)
      await viewer.waitForFunction((c) => document.querySelector('[data-testid="last-ts"]')?.textContent?.includes(c), clock)
      assert.match(await last.textContent(), new RegExp(clock))
      // no editing controls
      for (const id of ['add-statistic-button', 'save-button', 'import-worksheet', 'remove-chart']) {
        assert.equal(await viewer.getByTestId(id).count(), 0, `${id} in a read-only view`)
      }
      await viewer.screenshot({ path: join(repoRoot, 'tests/artifacts/e2e/share-read-only.png'), fullPage: true })
      await viewer.getByTestId('edit-copy').click()
      await viewer.getByTestId('add-statistic-button').waitFor()
      assert.equal(await viewer.getByTestId('read-only').count(), 0)
      const copy = new URL(viewer.url())
      assert.equal(copy.searchParams.get('ro'), null)
      assert.equal(copy.searchParams.get('at'), String(at)) // still the shared moment, now hers to change
      assert.equal(await viewer.getByTestId('remove-chart').count(), 2)
      assert.deepEqual(errors, [])
    } finally {
      await context.close()
    }
    assert.deepEqual(t.consoleErrors, [])
  })
})
