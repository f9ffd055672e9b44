// The Sources page end to end: agents and their sources as the real server reports them,
// an agent speaking the ingest protocol (names rendered as text, cost columns, a
// suspend request pending until the agent applies it, an API error inline, staleness),
// and, as root with BPF, suspending and resuming the local agent's bpf.disk probe.
import assert from 'node:assert/strict'
import { mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { launch } from './browser.mjs'
import { authedFetch, repoRoot, setupProblem, signIn, startLoupe, until } from './server.mjs'

const shots = join(repoRoot, 'tests/artifacts/e2e')

const skip = setupProblem()

if (skip) it(`end-to-end sources page (skipped: ${skip})`, { skip }, () => {})

// What an agent could name itself and its probe: must show as text, never run as HTML.
const AGENT = 'e2e/agent <b>bold</b>'
const PROBE = '<img src=x onerror="window.__loupeInjected=1">'
const FLAKY = 'e2e.flaky'

/**
 * An agent that speaks the ingest protocol: it reports its sources every second and
 * applies the suspend list of each answer only when `applying` is on, so that the test
 * can see a request pending in the agent.
 */
function fakeAgent(base, token) {
  const agent = {
    applying: false,
    reporting: true,
    suspended: false,
    flakySuspendable: true,
    answers: 0,
    lastError: null,
    async report() {
      const state = agent.suspended ? 'suspended' : 'active'
      const body = {
        frames: [],
        agent: AGENT,
        sent_at: Date.now() / 1000 + 90, // its clock runs 90 s ahead: flagged
        stats: { cpu_pct: 1.5, rss_bytes: 10 * 2 ** 20, queue_frames: 0, queue_bytes: 0, dropped_frames: 3, in_process: false },
        status: [
          {
            name: PROBE,
            host: 'e2e-host',
            families: ['disk'],
            state,
            reason: agent.suspended ? 'suspended by an operator' : '',
            suspendable: true,
            cost: agent.suspended
              ? null
              : { runs_per_s: 1234, ns_per_run: 2500, bpf_cpu_pct: 0.42, map_fill: 0.85, dropped: 2, dropped_total: 40, missed: 0, missed_total: 0, drain_ms: 1.5 },
          },
          { name: FLAKY, host: 'e2e-host', families: ['cpu'], state: 'active', reason: '', suspendable: agent.flakySuspendable },
        ],
      }
      const r = await authedFetch(`${base}/api/v1/ingest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify(body),
      })
      const answer = await r.json()
      if (!r.ok) throw new Error(`ingest answered ${r.status}: ${JSON.stringify(answer)}`)
      if (agent.applying && Array.isArray(answer.suspend)) agent.suspended = answer.suspend.includes(PROBE)
      agent.answers += 1
    },
  }
  const timer = setInterval(() => {
    if (agent.reporting) agent.report().catch((e) => (agent.lastError = e))
  }, 1000)
  agent.stop = () => clearInterval(timer)
  return agent
}

async function apiSources(base) {
  const r = await authedFetch(`${base}/api/v1/sources`)
  assert.equal(r.status, 200)
  return r.json()
}

describe('Loupe sources page in Chromium', { skip: skip ?? false }, () => {
  let server
  let browser
  let page
  let agent
  const consoleErrors = []
  // The 409 this test provokes on purpose is logged by Chromium as a failed resource.
  const expectedErrors = [/status of 409/]

  before(async () => {
    mkdirSync(shots, { recursive: true })
    // This page needs the agents' reports, not the demo's history: no backfill to wait for.
    // The local agent reports once its probes are loaded: as root with BPF, under load, that
    // took 50 s here (the BPF verifier), hence the longer wait.
    server = await startLoupe({
      backfill: 0,
      readyMs: 150_000,
      readyWhat: 'the demo and local agents in /api/v1/sources',
      ready: async (base) => {
        const l = await (await authedFetch(`${base}/api/v1/sources`)).json()
        return l.sources?.some((s) => s.demo) && l.sources.some((s) => !s.demo)
      },
    })
    browser = await launch()
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    await signIn(page, server)
    page.setDefaultTimeout(15_000)
    page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()))
    page.on('pageerror', (e) => consoleErrors.push(String(e)))
  })

  after(async () => {
    agent?.stop()
    await browser?.close().catch(() => {})
    await server?.stop()
  })

  const shot = (name) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true })
  const section = (id) =>
    page.locator('[data-testid="agent-section"]').filter({ has: page.getByTestId('agent-id').getByText(id, { exact: true }) })
  const row = (id, name) =>
    section(id)
      .locator('[data-testid="source-row"]')
      .filter({ has: page.getByTestId('source-name').getByText(name, { exact: true }) })
  const stateOf = (r) => r.getAttribute('data-state')
  const waitState = (what, r, state, ms = 15_000) => until(`${what} to be ${state}`, async () => (await stateOf(r)) === state, ms, 250)

  it('shows the demo agent and this machine\'s procfs sources, and the families', async () => {
    const api = await until('the local agent\'s procfs sources', async () => {
      const l = await apiSources(server.base)
      return l.sources.some((s) => s.name.startsWith('procfs.') && !s.demo) && l.sources.some((s) => s.demo) ? l : null
    })
    await page.goto(server.base + '/')
    await page.getByTestId('nav-sources').click()
    await page.getByTestId('sources-page').waitFor()
    assert.match(page.url(), /\/sources$/)

    // The demo agent: its synthetic sources, active and labelled.
    const demoAgent = api.sources.find((s) => s.demo).agent
    const synthetic = section(demoAgent).locator('[data-testid="source-row"]').filter({ hasText: /^\s*synthetic/ })
    await synthetic.first().waitFor()
    assert.ok((await synthetic.count()) >= 1)
    assert.equal(await stateOf(synthetic.first()), 'active')
    assert.match(await synthetic.first().textContent(), /demo data/)
    assert.match(await section(demoAgent).getByTestId('agent-process').textContent(), /in the server process/)

    // This machine's procfs sources, each in the state the API gives (procfs.disk stands by while bpf.disk runs).
    const procfs = api.sources.filter((s) => s.name.startsWith('procfs.') && !s.demo)
    const local = procfs[0].agent
    for (const s of procfs) {
      const r = row(local, s.name)
      await r.waitFor()
      const now = (await apiSources(server.base)).sources.find((x) => x.agent === s.agent && x.name === s.name)
      await waitState(s.name, r, now.state)
      assert.equal(await r.getByTestId('state-badge').getAttribute('data-state'), now.state)
      if (now.reason) assert.equal(await r.getByTestId('source-reason').textContent(), now.reason)
      // procfs sources have no run-time cost to show, and nothing to suspend.
      assert.equal(await r.getByTestId('cost-events').textContent(), '–')
      assert.equal(await r.getByTestId('source-control').count(), 0)
    }
    const figures = section(local)
    assert.match(await figures.getByTestId('agent-cpu').textContent(), /^[\d.,]+ %$/)
    assert.match(await figures.getByTestId('agent-rss').textContent(), /iB$/)
    assert.equal(await figures.getByTestId('agent-stale').count(), 0)

    // Families: one per family, ✓ or ✗ as the API says, the reason when there is none.
    for (const [family, ok] of Object.entries(api.families)) {
      const f = page.getByTestId(`family-${family}`)
      assert.equal(await f.getAttribute('data-ok'), String(ok), family)
      if (!ok) assert.equal(await f.getByTestId('family-detail').textContent(), api.missing[family])
    }
    assert.equal(await page.locator('[data-testid^="family-"][data-ok]').count(), Object.keys(api.families).length)
    for (const family of ['nfs', 'disk', 'cpu', 'net', 'tcp']) assert.ok(family in api.families, `family ${family} is listed`)
    await shot('07-sources')
  })

  it('renders what an agent reports as text, with its cost and its own figures', async () => {
    const token = readFileSync(join(server.dataDir, 'ingest.token'), 'utf8').trim()
    agent = fakeAgent(server.base, token)
    await until('the agent\'s first report', () => agent.answers > 0 || agent.lastError, 10_000)
    if (agent.lastError) throw agent.lastError

    const probe = row(AGENT, PROBE)
    await probe.waitFor()
    assert.equal(await section(AGENT).getByTestId('agent-id').textContent(), AGENT)
    assert.equal(await probe.getByTestId('source-name').textContent(), PROBE)
    assert.equal(await section(AGENT).locator('img, b').count(), 0, 'no element made from the names')
    assert.equal(await page.evaluate(() => window.__loupeInjected), undefined)

    // The list can be read between the agent's status and its cost being recorded: wait for the cost.
    await until('the probe\'s cost', async () => (await probe.getByTestId('cost-events').textContent()) !== '–', 10_000)
    const cells = {}
    for (const k of ['events', 'ns', 'cpu', 'fill', 'dropped', 'missed']) cells[k] = await probe.getByTestId(`cost-${k}`).textContent()
    assert.deepEqual(cells, { events: '1,234', ns: '2.5 µs', cpu: '0.42 %', fill: '85.0 %', dropped: '2 / 40', missed: '0 / 0' })
    assert.match(await probe.getByTestId('cost-fill').getAttribute('class'), /warn-text/, 'a map 85 % full is flagged')
    const s = section(AGENT)
    assert.equal(await s.getByTestId('agent-process').textContent(), 'separate process')
    assert.equal(await s.getByTestId('agent-cpu').textContent(), '1.5 %')
    assert.equal(await s.getByTestId('agent-rss').textContent(), '10 MiB')
    assert.equal(await s.getByTestId('agent-queue').textContent(), '0 frames (0 B)')
    assert.equal(await s.getByTestId('agent-dropped').textContent(), '3')
    assert.match(await s.getByTestId('agent-clock').textContent(), /^\+(89|90)(\.\d+)? s$/)
    assert.match(await s.getByTestId('agent-clock-skewed').textContent(), /^clock off by \+(89|90)(\.\d+)? s$/)
  })

  it('keeps the view in the URL', async () => {
    await page.getByTestId('filter-agent').selectOption(AGENT)
    await until('the agent in the URL', () => page.url().includes(`agent=${encodeURIComponent(AGENT)}`), 5_000)
    await page.reload()
    await row(AGENT, PROBE).waitFor()
    assert.deepEqual(await page.locator('[data-testid="agent-id"]').allTextContents(), [AGENT])
    await page.getByTestId('filter-state').locator('button[data-state="standby"]').click()
    await until('the state in the URL', () => /[?&]state=standby/.test(page.url()), 5_000)
    await page.getByTestId('sources-filtered-out').waitFor()
    await page.getByTestId('sources-filtered-out').getByRole('button').click()
    await until('every agent again', async () => (await page.locator('[data-testid="agent-id"]').count()) >= 3, 10_000)
    assert.ok(!page.url().includes('?'))
  })

  it('shows a suspend request pending until the agent applies it, and the same for resume', async () => {
    const probe = row(AGENT, PROBE)
    const button = probe.getByTestId('source-control')
    assert.equal(await button.textContent(), 'Suspend')
    await button.click()
    await until('suspending…', async () => (await button.textContent()) === 'suspending…', 10_000)
    assert.ok(await button.isDisabled())
    const req = (await apiSources(server.base)).sources.find((x) => x.agent === AGENT && x.name === PROBE)
    assert.equal(req.suspend_requested, true)
    // The agent has not applied it: still active and still pending after further reports.
    const answers = agent.answers
    await until('two more reports', () => agent.answers >= answers + 2, 10_000)
    await page.waitForResponse((r) => r.url().endsWith('/api/v1/sources') && r.request().method() === 'GET')
    assert.equal(await stateOf(probe), 'active')
    assert.equal(await button.textContent(), 'suspending…')
    await shot('08-sources-suspending')

    agent.applying = true
    await waitState('the probe', probe, 'suspended')
    await until('Resume', async () => (await button.textContent()) === 'Resume', 10_000)
    assert.equal(await probe.getByTestId('source-reason').textContent(), 'suspended by an operator')
    assert.equal(await probe.getByTestId('cost-events').textContent(), '–', 'a suspended probe costs nothing')

    agent.applying = false
    await button.click()
    await until('resuming…', async () => (await button.textContent()) === 'resuming…', 10_000)
    assert.equal(await stateOf(probe), 'suspended')
    agent.applying = true
    await waitState('the probe', probe, 'active')
    await until('Suspend', async () => (await button.textContent()) === 'Suspend', 10_000)
    assert.equal(await probe.getByTestId('cost-events').textContent(), '1,234')
  })

  it('shows the API\'s error inline with its detail', async () => {
    const flaky = row(AGENT, FLAKY)
    const button = flaky.getByTestId('source-control')
    await until('a Suspend button on the flaky source', async () => (await button.count()) === 1, 10_000)
    // Hold the page's reads of the list (they reach the server later, unchanged) while the
    // agent says the source can no longer be suspended, so the click meets the server's 409.
    const held = []
    const hold = (route) => held.push(route)
    const isList = (url) => new URL(url).pathname === '/api/v1/sources'
    await page.route(isList, hold)
    try {
      agent.flakySuspendable = false
      const answers = agent.answers
      await until('the agent to report it', () => agent.answers >= answers + 2, 10_000)
      await button.click()
      const error = page.locator('.control-error-row').filter({ has: page.getByTestId('control-error') })
      await error.first().waitFor()
      const text = await error.first().getByTestId('control-error').textContent()
      assert.match(text, /Cannot suspend e2e\.flaky: e2e\.flaky cannot be suspended \(only probes with a run-time cost can\)/)
      await shot('09-sources-error')
    } finally {
      await page.unroute(isList, hold)
      for (const r of held) await r.continue().catch(() => {})
    }
    await until('the button to go once the list says so', async () => (await button.count()) === 0, 10_000)
  })

  it('suspends and resumes bpf.disk as root, procfs.disk standing in meanwhile', async (t) => {
    const list = await apiSources(server.base)
    const bpf = list.sources.find((s) => s.name === 'bpf.disk' && !s.demo)
    if (!bpf || bpf.state !== 'active' || !bpf.suspendable) {
      const why = !bpf
        ? 'the local agent reports no bpf.disk probe'
        : `bpf.disk is ${bpf.state}${bpf.reason ? ` (${bpf.reason})` : ''}${bpf.suspendable ? '' : ', not suspendable'}`
      t.skip(`needs root with BPF: ${why}`)
      return
    }
    const procfs = list.sources.find((s) => s.name === 'procfs.disk' && s.agent === bpf.agent)
    assert.ok(procfs, 'the local agent also reports procfs.disk')
    const disk = row(bpf.agent, 'bpf.disk')
    const fallback = row(bpf.agent, 'procfs.disk')
    await waitState('bpf.disk', disk, 'active')
    await waitState('procfs.disk', fallback, 'standby')
    assert.match(await fallback.getByTestId('source-reason').textContent(), /bpf\.disk/)
    assert.match(await disk.getByTestId('cost-events').textContent(), /^[\d,.]+$/)
    assert.match(await disk.getByTestId('cost-cpu').textContent(), / %$/)

    const button = disk.getByTestId('source-control')
    await button.click()
    await waitState('bpf.disk', disk, 'suspended')
    await waitState('procfs.disk', fallback, 'active')
    await until('Resume', async () => (await button.textContent()) === 'Resume', 10_000)
    assert.equal(await disk.getByTestId('cost-events').textContent(), '–')
    await shot('10-sources-bpf-suspended')

    await button.click()
    await waitState('bpf.disk', disk, 'active')
    await waitState('procfs.disk', fallback, 'standby')
    await until('Suspend', async () => (await button.textContent()) === 'Suspend', 10_000)
    const after = (await apiSources(server.base)).sources.find((s) => s.agent === bpf.agent && s.name === 'bpf.disk')
    assert.equal(after.suspend_requested, false)
  })

  it('marks an agent that stopped reporting stale', async () => {
    agent.reporting = false
    const s = section(AGENT)
    await s.getByTestId('agent-stale').waitFor({ timeout: 30_000 })
    await waitState('the agent\'s probe', row(AGENT, PROBE), 'off', 10_000)
    assert.match(await row(AGENT, PROBE).getByTestId('source-reason').textContent(), /not reporting/)
    assert.match(await s.getByTestId('agent-last-seen').textContent(), /s ago$/)
  })

  it('logged no errors in the page but the provoked one', () => {
    assert.deepEqual(consoleErrors.filter((e) => !expectedErrors.some((re) => re.test(e))), [])
  })
})
