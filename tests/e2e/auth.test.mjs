// Sign-in, roles and the admin page end to end: a person signs in, makes a viewer and an
// agent token, the agent's frames are taken and then refused once it is revoked, the audit log
// shows all of it, and the viewer sees no admin page. Also the demo's one-click link.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { join } from 'node:path'
import { ADMIN_PASSWORD, repoRoot, setupProblem, startLoupe, until } from './server.mjs'

const skip = setupProblem()

/** A demo server that is ready as soon as it answers (these tests need no history), and Chromium. */
async function serverAndBrowser() {
  const server = await startLoupe({ backfill: 0, ready: async () => true })
  const { launch } = await import('./browser.mjs')
  return { server, browser: await launch() }
}
if (skip) it(`end-to-end sign-in and admin (skipped: ${skip})`, { skip }, () => {})

describe('Loupe sign-in and admin in Chromium', { skip: skip ?? false }, () => {
  let server
  let browser
  let context
  let page
  let demoLink
  const consoleErrors = []
  // Failed sign-ins (401) and a refused user name (400) on purpose: Chromium logs them as failed resources.
  const expected = [/status of 401/, /status of 400/]

  before(async () => ({ server, browser } = await serverAndBrowser()))
  after(async () => {
    await browser?.close().catch(() => {})
    await server?.stop()
  })

  async function freshPage() {
    await context?.close()
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    page = await context.newPage()
    page.setDefaultTimeout(15_000)
    page.on('console', (m) => m.type() === 'error' && !expected.some((re) => re.test(m.text())) && consoleErrors.push(m.text()))
    page.on('pageerror', (e) => consoleErrors.push(String(e)))
    // Any Content-Security-Policy violation of the built UI is a failure.
    await page.addInitScript(() => {
      window.__cspViolations = []
      document.addEventListener('securitypolicyviolation', (e) => window.__cspViolations.push(`${e.violatedDirective}: ${e.blockedURI}`))
    })
    return page
  }

  async function signInWithForm(user, password) {
    await page.getByTestId('login-user').fill(user)
    await page.getByTestId('login-password').fill(password)
    await page.getByTestId('login-submit').click()
  }

  it('asks for sign-in, refuses a wrong password and signs in with the right one', async () => {
    await freshPage()
    await page.goto(server.base + '/status')
    await page.getByTestId('login-form').waitFor()
    await signInWithForm('admin', 'not-the-password')
    assert.equal(await page.getByTestId('login-error').textContent(), 'Wrong user name or password.')
    await signInWithForm('admin', ADMIN_PASSWORD)
    await page.getByTestId('user-menu').waitFor()
    assert.equal(await page.getByTestId('user-name').textContent(), 'admin')
    assert.equal(await page.getByTestId('user-role').textContent(), 'admin')
    // the page asked for is the page shown, and the cookie is out of the page's reach
    assert.equal(new URL(page.url()).pathname, '/status')
    assert.equal(await page.evaluate(() => document.cookie), '')
    const [cookie] = await context.cookies()
    assert.equal(cookie.name, 'loupe_session')
    assert.ok(cookie.httpOnly && cookie.sameSite === 'Strict', JSON.stringify(cookie))
  })

  it('adds a viewer, makes an agent token that works until it is revoked, and logs it all', async () => {
    await page.getByTestId('nav-admin').click()
    await page.getByTestId('admin-page').waitFor()
    // a hostile-looking name is refused by the server and the reason shown
    await page.getByTestId('user-add-name').fill('<img src=x onerror=alert(1)>')
    await page.getByTestId('user-add-password').fill('viewer-password')
    await page.getByTestId('user-add-submit').click()
    assert.match(await page.getByTestId('admin-error').textContent(), /user name must be 1-64 characters/)
    await page.getByTestId('user-add-name').fill('vera')
    await page.getByTestId('user-add-submit').click()
    await page.locator('[data-testid="user-row"][data-user="vera"]').waitFor()

    await page.getByTestId('token-add-name').fill('nas2')
    await page.getByTestId('token-add-submit').click()
    const secret = (await page.getByTestId('token-secret-value').textContent()).trim()
    assert.match(secret, /^lp_/)
    const ingest = () =>
      fetch(`${server.base}/api/v1/ingest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
        body: JSON.stringify({ frames: [], agent: 'nas2' }),
      })
    assert.equal((await ingest()).status, 200)
    const row = page.locator('[data-testid="token-row"][data-token="nas2"]')
    page.once('dialog', (d) => d.accept())
    await row.getByTestId('token-revoke').click()
    await until('the token shown revoked', async () => (await row.getAttribute('data-state')) === 'revoked')
    const refused = await ingest()
    assert.equal(refused.status, 401)
    assert.match((await refused.json()).detail, /revoked/)

    await until('the audit log', async () => (await page.locator('[data-testid="audit-row"]').count()) >= 4)
    const actions = await page.getByTestId('audit-row').evaluateAll((rows) => rows.map((r) => r.dataset.action))
    for (const a of ['token.revoke', 'token.create', 'user.create', 'login', 'login.failed']) assert.ok(actions.includes(a), `${a} in ${actions}`)
    await page.screenshot({ path: join(repoRoot, 'tests/artifacts/e2e/admin.png'), fullPage: true })
    assert.deepEqual(await page.evaluate(() => window.__cspViolations), [])
  })

  it('signs out, and a viewer sees no admin page', async () => {
    await page.getByTestId('sign-out').click()
    await page.getByTestId('login-form').waitFor()
    await page.goto(server.base + '/admin')
    await page.getByTestId('login-form').waitFor() // the session is gone on the server too
    await signInWithForm('vera', 'viewer-password')
    await page.getByTestId('user-menu').waitFor()
    assert.equal(await page.getByTestId('user-role').textContent(), 'viewer')
    assert.equal(await page.getByTestId('nav-admin').count(), 0)
    assert.match(await page.locator('.empty.big').textContent(), /Only admins/)
    // the worksheet still works for reading
    await page.getByTestId('nav-worksheet').click()
    await page.getByTestId('user-menu').waitFor()
    assert.deepEqual(await page.evaluate(() => window.__cspViolations), [])
    assert.deepEqual(consoleErrors, [])
  })
})

describe('the demo one-click sign-in link', { skip: skip ?? false }, () => {
  let server
  let browser

  before(async () => ({ server, browser } = await serverAndBrowser()))
  after(async () => {
    await browser?.close().catch(() => {})
    await server?.stop()
  })

  it('signs in from the link `loupe serve --demo` prints, then drops it from the address', async () => {
    const link = await until('the printed link', async () => server.log().match(/(http:\/\/\S+\?login=\S+)/)?.[1])
    const page = await browser.newPage()
    await page.goto(link)
    await page.getByTestId('user-menu').waitFor()
    assert.equal(await page.getByTestId('user-role').textContent(), 'admin')
    assert.equal(new URL(page.url()).search, '')
    // a wrong link signs in no one
    const other = await browser.newPage()
    await other.goto(`${server.base}/?login=wrong`)
    await other.getByTestId('login-form').waitFor()
  })
})
