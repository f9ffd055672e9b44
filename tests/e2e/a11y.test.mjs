// Accessibility: axe-core (the engine behind most a11y checkers) on each page of the UI with
// real content from the demo NAS, in the light and the dark theme (chosen as the system's, as a
// browser without a stored choice does). No serious or critical violation may remain: colour
// contrast included.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { describe, it } from 'node:test'
import { demoInBrowser, setupProblem } from './server.mjs'

const skip = setupProblem()
if (skip) it(`end-to-end accessibility (skipped: ${skip})`, { skip }, () => {})

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

/** axe's serious and critical violations on the page as it is now, one line each. */
async function violations(page) {
  // Evaluated through the DevTools protocol, which the page's CSP does not govern.
  await page.evaluate(axeSource)
  const found = await page.evaluate(async () => (await window.axe.run(document, { resultTypes: ['violations'] })).violations)
  return found
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help}: ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(' | ')}`)
}

describe('Loupe accessibility in Chromium', { skip: skip ?? false }, () => {
  const t = demoInBrowser({ backfill: 120 })
  const pages = [
    ['worksheet with a breakdown and a heat map', '/?s=nfs.ops;by:client&s=nfs.ops;by:latency;d:heatmap', ['timeseries-chart', 'heatmap-chart']],
    ['worksheet with a heat map cropped and its bucket axis zoomed', '/?s=nfs.ops;by:latency;d:heatmap;crop:1;yz:13:20', ['heatmap-chart', 'zoom-badge', 'reset-zoom', 'zoom-note']],
    ['worksheet with a file hierarchy and a directory filter', '/?s=nfs.ops;by:file;h:treemap;w:file%5E=%2Fexport', ['timeseries-chart', 'hierarchy-chart']],
    ['status', '/status', ['status-tiles']],
    ['sources', '/sources', ['sources-page']],
    ['runs', '/runs', ['runs-page']],
    ['admin', '/admin', ['admin-page']],
    ['alerts with the new-alert form open', '/alerts?new=nfs.ops', ['alert-form', 'event-log']],
    ['alerts with a per-client form and an event from a link', '/alerts?new=nfs.ops;by:client&event=1', ['alert-by-note', 'event-focus-message', 'event-log']],
    ['a client\'s diagnosis', '/clients?client=10.0.0.7', ['client-verdict']],
  ]
  for (const theme of ['light', 'dark']) {
    for (const [what, path, ready] of pages) {
      it(`has no serious or critical violation: ${what}, ${theme}`, async () => {
        await t.page.emulateMedia({ colorScheme: theme })
        await t.page.goto(t.server.base + path)
        for (const id of ready) await t.page.getByTestId(id).first().waitFor()
        assert.equal(await t.page.evaluate(() => document.documentElement.dataset.theme), theme)
        assert.deepEqual(await violations(t.page), [])
      })
    }
    it(`has no serious or critical violation: the status page's tile editor, ${theme}`, async () => {
      await t.page.emulateMedia({ colorScheme: theme })
      await t.page.goto(t.server.base + '/status')
      await t.page.getByTestId('edit-tiles').click()
      await t.page.getByTestId('tile-form').first().waitFor()
      assert.deepEqual(await violations(t.page), [])
    })
    it(`has no serious or critical violation: sign-in, ${theme}`, async () => {
      const context = await t.browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: theme }) // signed out
      try {
        const page = await context.newPage()
        await page.goto(t.server.base + '/')
        await page.getByTestId('login-form').waitFor()
        assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), theme)
        assert.deepEqual(await violations(page), [])
      } finally {
        await context.close()
      }
    })
  }
  it('logged no errors in the page', () => assert.deepEqual(t.consoleErrors, []))
})
