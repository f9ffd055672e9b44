// The browser's part of a live heat map over a week: how long each 1 Hz update takes, from the
// new columns arriving to the chart drawn (User Timing marks the UI sets: lib/timing.ts), in
// Debian's Chromium against a real `loupe serve --demo`. The heat map's answers are synthetic so
// that every cell is filled (the worst case; a real week is sparser): the week's full read as
// `columns` x 26 latency buckets, then a read a second of its newest column with new values.
// Cases: what the UI asks for a week (300 columns), the server's cap (769 columns, 19,994
// cells: routes/query.py MAX_CELLS) and, as the peer, four times the cap (what the cap prevents).
// A week's column is 14 minutes, so a 40 s run seldom sees one start; the case `..._new_column_every_5s`
// runs the answers' clock fast, a new column every 5 s, so that a fifth of its updates move the map
// along time and redraw its chart's axes (the worst case of an update, with a new colour range).
//
//   node bench/ui_heatmap.mjs [--seconds 30] [--only CASE,...] [--profile] [--trace] [--label TEXT] [--out bench/results/ui-<UTC>.json]
//
// --label says what was measured (e.g. which build of the UI, served from LOUPE_STATIC_DIR), for
// runs of two builds taken one after the other to be told apart in their results.
// --profile samples the page's JavaScript (Chromium's CPU profiler) over each case's updates and
// adds the functions with the most self time to the case's result (where an update's time goes).
// --trace records Chromium's trace of the page over them and adds each update's time on the
// page's main thread's CPU, and the garbage collections within updates: on a machine others share,
// the CPU time of an update says what it costs where its wall time also says how long it waited
// for a core. (Tracing costs time of its own: compare traced runs with traced runs.)
import { mkdirSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { launch, newPage } from '../tests/e2e/browser.mjs'
import { repoRoot, signIn, startLoupe } from '../tests/e2e/server.mjs'

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? process.argv[i + 1] : dflt
}
const SECONDS = Number(arg('seconds', '30'))
const WEEK = 7 * 86400
const BUCKETS = Array.from({ length: 26 }, (_, i) => i + 10) // latency: 2^10 .. 2^35 ns
const ONLY = arg('only', '')
const PROFILE = process.argv.includes('--profile')
const TRACE = process.argv.includes('--trace')
const CASES = [
  { name: 'ui_week_300_columns', columns: 300 },
  { name: 'server_cap_769_columns', columns: 769 },
  { name: 'server_cap_new_column_every_5s', columns: 769, columnEvery: 5 },
  { name: 'peer_4x_cap_3076_columns', columns: 3076 },
]

function bucket(e) {
  return { index: e, lo: e === BUCKETS[0] ? 0 : 2 ** e, hi: 2 ** (e + 1), label: `2^${e} ns` }
}

/** A dense heat map of `n` columns from `start` at `step`: every bucket of every column has a rate. */
function result(start, step, n) {
  const timestamps = Array.from({ length: n }, (_, i) => start + i * step)
  const cells = []
  const total = []
  for (let t = 0; t < n; t++) {
    let sum = 0
    for (let b = 0; b < BUCKETS.length; b++) {
      const v = Math.round(10 ** (1 + 3 * Math.random() * Math.exp(-((b - 12) ** 2) / 40)) * 100) / 100
      cells.push([t, b, v])
      sum += v
    }
    total.push(sum)
  }
  return {
    statistic: { metric: 'nfs.ops', by: 'latency', where: {}, name: 'NFS operations per second broken down by latency', unit: 'ops/s' },
    dim: 'latency',
    tier: 'minute',
    step,
    start,
    end: start + n * step,
    timestamps,
    buckets: BUCKETS.map(bucket),
    cells,
    max: Math.max(...cells.map((c) => c[2])),
    total,
    names: {},
  }
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}

async function runCase(browser, server, c) {
  const errors = []
  const page = await newPage(browser, { width: 1280, height: 800 }, errors)
  await signIn(page, server)
  const step = Math.ceil(WEEK / c.columns / 60) * 60
  let reads = 0
  let tails = 0
  const t0 = Date.now() / 1000
  // the answers' clock: real time, or a column's step every `columnEvery` seconds
  const clock = () => (c.columnEvery ? t0 + ((Date.now() / 1000 - t0) * step) / c.columnEvery : Date.now() / 1000)
  await page.route('**/api/v1/heatmap?**', (route) => {
    const u = new URL(route.request().url())
    const now = Math.floor(clock())
    const end = now - (now % step) + step
    if (u.searchParams.has('step')) {
      tails++
      const from = Number(u.searchParams.get('start'))
      return route.fulfill({ json: result(from, step, Math.max(1, (end - from) / step)) })
    }
    reads++
    return route.fulfill({ json: result(end - c.columns * step, step, c.columns) })
  })
  await page.addInitScript(() => {
    window.__timings = []
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) window.__timings.push({ name: e.name, start: e.startTime, end: e.startTime + e.duration, detail: e.detail ?? null })
    }).observe({ entryTypes: ['mark', 'measure'] })
  })
  await page.goto(`${server.base}/?range=1w&s=nfs.ops;by:latency;d:heatmap`)
  await page.getByTestId('heatmap-chart').waitFor({ timeout: 60_000 })
  const cdp = PROFILE || TRACE ? await page.context().newCDPSession(page) : null
  if (PROFILE) {
    await cdp.send('Profiler.enable')
    await cdp.send('Profiler.setSamplingInterval', { interval: 200 })
    await cdp.send('Profiler.start')
  }
  const trace = []
  if (TRACE) {
    cdp.on('Tracing.dataCollected', (e) => trace.push(...e.value))
    await cdp.send('Tracing.start', { transferMode: 'ReportEvents', traceConfig: { includedCategories: ['devtools.timeline', 'blink.user_timing', 'v8'] } })
  }
  await page.waitForTimeout(SECONDS * 1000)
  const profile = PROFILE ? selfTimes((await cdp.send('Profiler.stop')).profile) : undefined
  if (TRACE) {
    const complete = new Promise((ok) => cdp.once('Tracing.tracingComplete', ok))
    await cdp.send('Tracing.end')
    await complete
  }
  const timings = await page.evaluate(() => window.__timings)
  const cells = Number(await page.getByTestId('heatmap-rows').getAttribute('data-rows').then((r) => r.split(',').length)) * c.columns
  await page.close()
  // An update: from the mark of new data to the end of the heat map's next drawing.
  const marks = timings.filter((t) => t.name === 'loupe:heatmap-data')
  // the chart (axes, key, band) and, beneath it, the raster of its cells: both drawn ends the update
  const drawn = timings.filter((t) => t.name === 'loupe:chart-drawn' && (t.detail === 'heatmap-chart' || t.detail === 'heatmap-cells'))
  const updates = []
  marks.forEach((m, i) => {
    const next = marks[i + 1]?.start ?? Infinity
    const ends = drawn.filter((x) => x.end >= m.start && x.end < next).map((x) => x.end)
    if (ends.length) updates.push(Math.max(...ends) - m.start)
  })
  const ms = updates.slice(1) // the first is the page's first paint, not an update
  if (errors.length) throw new Error(`${c.name}: page errors: ${errors.join('; ')}`)
  if (ms.length < SECONDS / 2) throw new Error(`${c.name}: only ${ms.length} updates in ${SECONDS} s (reads ${reads}, tails ${tails})`)
  const draws = drawn.map((d) => d.end - d.start)
  return {
    columns: c.columns,
    ...(c.columnEvery ? { new_column_every_s: c.columnEvery } : {}),
    cells,
    step_s: step,
    updates: ms.length,
    full_reads: reads,
    tail_reads: tails,
    update_median_ms: pct(ms, 50),
    update_p95_ms: pct(ms, 95),
    update_max_ms: Math.max(...ms),
    chart_draws: drawn.filter((d) => d.detail === 'heatmap-chart').length,
    chart_draw_median_ms: pct(draws.filter((_, i) => drawn[i].detail === 'heatmap-chart'), 50),
    cells_draw_median_ms: pct(draws.filter((_, i) => drawn[i].detail === 'heatmap-cells'), 50),
    ...(profile ? { profile_top_self_ms_per_s: profile } : {}),
    ...(TRACE ? updateCosts(trace) : {}),
  }
}

/**
 * From a trace of the page: each update's CPU time on the main thread (thread clock from the
 * mark of new data to the last drawing's measure before the next mark), and its garbage
 * collections (MinorGC, MajorGC) inside it; the first update, the page's first paint, left out.
 */
function updateCosts(events) {
  const main = events.find((e) => e.name === 'thread_name' && e.args.name === 'CrRendererMain')
  const mine = events.filter((e) => e.pid === main.pid && e.tid === main.tid)
  const marks = mine.filter((e) => e.name === 'loupe:heatmap-data').sort((a, b) => a.ts - b.ts)
  const drawn = mine.filter((e) => e.name === 'UserTiming::Measure')
  const gcs = mine.filter((e) => e.ph === 'X' && (e.name === 'MinorGC' || e.name === 'MajorGC'))
  const cpu = []
  const gc = []
  marks.forEach((m, i) => {
    const next = marks[i + 1]?.ts ?? Infinity
    const ends = drawn.filter((x) => x.ts >= m.ts && x.ts < next)
    if (!ends.length) return
    const end = Math.max(...ends.map((x) => x.ts + x.dur))
    cpu.push((Math.max(...ends.map((x) => x.tts + x.tdur)) - m.tts) / 1000)
    gc.push(gcs.reduce((sum, g) => sum + Math.max(0, Math.min(end, g.ts + g.dur) - Math.max(m.ts, g.ts)), 0) / 1000)
  })
  const [c, g] = [cpu.slice(1), gc.slice(1)]
  if (!c.length) throw new Error('the trace has no update (no loupe:heatmap-data mark followed by a drawing)')
  return {
    traced_updates: c.length,
    update_cpu_median_ms: pct(c, 50),
    update_cpu_p95_ms: pct(c, 95),
    update_cpu_max_ms: Math.max(...c),
    updates_with_gc: g.filter((x) => x > 0).length,
    update_gc_max_ms: Math.max(...g),
  }
}

/** The 20 functions with the most self time in a CPU profile, ms per second of the run. */
function selfTimes(p) {
  const byNode = new Map(p.nodes.map((n) => [n.id, n]))
  const acc = new Map()
  const dts = p.timeDeltas
  p.samples.forEach((id, i) => {
    const f = byNode.get(id).callFrame
    const key = `${f.functionName || '(anonymous)'} ${f.url.split('/').pop()}:${f.lineNumber + 1}`
    acc.set(key, (acc.get(key) ?? 0) + (dts[i + 1] ?? 0) / 1000)
  })
  const seconds = (p.endTime - p.startTime) / 1e6
  return Object.fromEntries([...acc].sort((a, b) => b[1] - a[1]).slice(0, 20).map(([k, v]) => [k, Math.round((v / seconds) * 100) / 100]))
}

const server = await startLoupe({ backfill: 30, readyMs: 120_000 })
const browser = await launch()
// the machine's load (1, 5, 15 min) before and after: others' work on its cores shows in the timings
const load = () => loadavg().map((x) => Math.round(x * 100) / 100)
const out = { started: new Date().toISOString(), seconds: SECONDS, ...(arg('label') ? { label: arg('label') } : {}), load_average_start: load(), cases: {} }
try {
  for (const c of CASES.filter((x) => !ONLY || ONLY.split(',').includes(x.name))) {
    process.stdout.write(`${c.name} ... `)
    out.cases[c.name] = await runCase(browser, server, c)
    console.log(JSON.stringify(out.cases[c.name]))
  }
  const cap = out.cases.server_cap_769_columns
  const peer = out.cases.peer_4x_cap_3076_columns
  const moving = out.cases.server_cap_new_column_every_5s
  if (cap) out.summary = {
    target: 'each update under 30 ms at the server cap (about 20k cells), those that add a column too',
    met: cap.update_p95_ms < 30 && (!moving || moving.update_p95_ms < 30),
    ...(peer ? { peer_ratio_median: peer.update_median_ms / cap.update_median_ms } : {}),
    worst_update_ms: Math.max(cap.update_max_ms, moving?.update_max_ms ?? 0),
  }
  console.log(JSON.stringify(out.summary))
  out.load_average_end = load()
} finally {
  await browser.close()
  await server.stop()
}
const file = arg('out', join(repoRoot, 'bench', 'results', `ui-${new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')}.json`))
mkdirSync(join(repoRoot, 'bench', 'results'), { recursive: true })
writeFileSync(file, JSON.stringify(out, null, 1) + '\n')
console.log(`wrote ${file}`)
