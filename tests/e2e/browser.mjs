// Debian's Chromium through playwright-core (no browser download here).
import { existsSync } from 'node:fs'

export const chromiumPath = process.env.CHROMIUM_PATH || '/usr/bin/chromium'

/** Why the browser tests cannot run here, or null. In CI a missing browser is a failure, not a skip. */
export function browserMissing() {
  if (existsSync(chromiumPath)) return null
  const why = `${chromiumPath} is missing (apt-get install -y chromium)`
  if (process.env.CI === 'true') throw new Error(`CI: ${why}`)
  return why
}

export async function launch() {
  const { chromium } = await import('playwright-core')
  return chromium.launch({
    executablePath: chromiumPath,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-quic',
    ],
  })
}

/** A page with the tests' defaults; console errors (except those matching `expected`) and page errors go to `errors`. */
export async function newPage(browser, viewport, errors, expected = []) {
  const page = await browser.newPage({ viewport })
  page.setDefaultTimeout(15_000)
  page.on('console', (m) => m.type() === 'error' && !expected.some((re) => re.test(m.text())) && errors.push(m.text()))
  page.on('pageerror', (e) => errors.push(String(e)))
  return page
}
