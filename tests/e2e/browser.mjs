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
