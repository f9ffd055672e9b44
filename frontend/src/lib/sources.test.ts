import { describe, expect, it } from 'vitest'
import type { SourceList, SourcePublic } from '../api/client'
import {
  PENDING_GIVE_UP_MS,
  STALE_AFTER_S,
  agentFigures,
  agentViews,
  controlView,
  costCells,
  costDetail,
  decodeSourcesView,
  encodeSourcesView,
  familyRows,
  filterAgents,
  formatAgo,
  formatPercent,
  isHealthy,
  pendingAction,
  recordCosts,
  sourceKey,
  stateBadge,
  stateCounts,
  trackPending,
  withSource,
  type CostSample,
} from './sources'

function src(over: Partial<SourcePublic>): SourcePublic {
  return {
    agent: 'nas1/procfs+bpf',
    name: 'bpf.disk',
    host: 'nas1',
    families: ['disk'],
    state: 'active',
    reason: '',
    demo: false,
    last_seen: 1000,
    suspendable: true,
    suspend_requested: false,
    cost: null,
    ...over,
  }
}

const bpfCost = {
  runs_per_s: 3824,
  bpf_cpu_pct: 0.3326413,
  ns_per_run: 869.88,
  map_fill: 0.0009,
  dropped: 0,
  dropped_total: 12,
  missed: 3,
  missed_total: 1234,
  drain_ms: 0.54,
}

describe('stateBadge', () => {
  it('gives each state its own label and tone', () => {
    expect(stateBadge('active')).toMatchObject({ label: 'active', tone: 'ok', icon: '✓' })
    expect(stateBadge('standby').tone).toBe('idle')
    expect(stateBadge('suspended').tone).toBe('paused')
    expect(stateBadge('off').tone).toBe('off')
    expect(stateBadge('error').tone).toBe('bad')
    const tones = ['active', 'standby', 'suspended', 'off', 'error'].map((s) => stateBadge(s).tone)
    expect(new Set(tones).size).toBe(5)
  })
  it('shows a state it does not know as it is, as a problem', () => {
    expect(stateBadge('draining')).toMatchObject({ label: 'draining', tone: 'bad' })
    expect(stateBadge('').label).toBe('unknown')
  })
  it('counts standby and suspended as healthy, off and error not', () => {
    expect(['active', 'standby', 'suspended'].every(isHealthy)).toBe(true)
    expect(isHealthy('off') || isHealthy('error') || isHealthy('x')).toBe(false)
  })
})

describe('costCells', () => {
  it('formats a BPF probe cost', () => {
    const c = costCells(bpfCost)
    expect(c.events.text).toBe('3,824')
    expect(c.ns.text).toBe('870 ns')
    expect(c.cpu.text).toBe('0.333 %')
    expect(c.fill.text).toBe('<0.1 %')
    expect(c.dropped).toEqual({ text: '0 / 12', warn: false })
    expect(c.missed).toEqual({ text: '3 / 1,234', warn: true })
  })
  it('shows a dash everywhere without a cost, and for what a cost leaves out', () => {
    for (const cell of Object.values(costCells(null))) expect(cell).toEqual({ text: '–', warn: false })
    const partial = costCells({ runs_per_s: 10, dropped_total: 4 })
    expect(partial.events.text).toBe('10')
    expect(partial.ns.text).toBe('–')
    expect(partial.cpu.text).toBe('–')
    expect(partial.fill.text).toBe('–')
    expect(partial.dropped.text).toBe('– / 4')
    expect(partial.missed.text).toBe('–')
  })
  it('has no time per event when nothing ran', () => {
    expect(costCells({ ...bpfCost, runs_per_s: 0, ns_per_run: 0 }).ns.text).toBe('–')
  })
  it('flags drops and a nearly full map', () => {
    const c = costCells({ ...bpfCost, dropped: 5, map_fill: 0.93 })
    expect(c.dropped).toEqual({ text: '5 / 12', warn: true })
    expect(c.fill).toEqual({ text: '93.0 %', warn: true })
    expect(costCells({ ...bpfCost, map_fill: 0.5 }).fill.warn).toBe(false)
  })
  it('ignores values that are not finite numbers', () => {
    expect(costCells({ runs_per_s: Number.NaN }).events.text).toBe('–')
  })
  it('formats tiny percentages and lists every figure for the tooltip', () => {
    expect(formatPercent(0.0004)).toBe('<0.001 %')
    expect(formatPercent(0)).toBe('0 %')
    expect(formatPercent(12.345)).toBe('12.3 %')
    expect(costDetail({ runs_per_s: 58, drain_ms: 3.342 })).toBe('drain_ms 3.34, runs_per_s 58')
    expect(costDetail(null)).toBe('')
  })
})

describe('suspend and resume', () => {
  it('knows what the agent is still to apply', () => {
    expect(pendingAction({ state: 'active', suspend_requested: true })).toBe('suspend')
    expect(pendingAction({ state: 'standby', suspend_requested: true })).toBe('suspend')
    expect(pendingAction({ state: 'suspended', suspend_requested: false })).toBe('resume')
    expect(pendingAction({ state: 'suspended', suspend_requested: true })).toBeNull()
    expect(pendingAction({ state: 'active', suspend_requested: false })).toBeNull()
    // Off or broken: nothing runs to detach, and a stale agent applies nothing.
    expect(pendingAction({ state: 'off', suspend_requested: true })).toBeNull()
    expect(pendingAction({ state: 'error', suspend_requested: true })).toBeNull()
  })

  it('offers Suspend, Resume, or a disabled pending label', () => {
    expect(controlView(src({ suspendable: false }), null)).toBeNull()
    expect(controlView(src({}), null)).toMatchObject({ action: 'suspend', label: 'Suspend', pending: false })
    expect(controlView(src({ state: 'suspended', suspend_requested: true }), null)).toMatchObject({ action: 'resume', label: 'Resume' })
    expect(controlView(src({ suspend_requested: true }), null)).toMatchObject({ action: null, label: 'suspending…', pending: true })
    expect(controlView(src({ state: 'suspended' }), null)).toMatchObject({ action: null, label: 'resuming…', pending: true })
    // While the POST is in flight.
    expect(controlView(src({}), 'suspend')).toMatchObject({ action: null, label: 'suspending…', pending: true })
    expect(controlView(src({ state: 'suspended', suspend_requested: true }), 'resume')).toMatchObject({ label: 'resuming…' })
  })

  it('lets an operator undo a request that is not applied, or whose agent is gone', () => {
    const stuck = controlView(src({ suspend_requested: true }), null, PENDING_GIVE_UP_MS + 1000)
    expect(stuck).toMatchObject({ action: 'resume', label: 'Resume', pending: false })
    expect(stuck!.title).toMatch(/has not applied the request for 21 s/)
    expect(controlView(src({ state: 'off', suspend_requested: true }), null)).toMatchObject({ action: 'resume', pending: false })
    expect(controlView(src({ state: 'suspended' }), null, PENDING_GIVE_UP_MS)).toMatchObject({ action: 'suspend' })
  })

  it('offers nothing to suspend on a probe that is off or failed', () => {
    expect(controlView(src({ state: 'off', reason: 'needs root (CAP_BPF and CAP_PERFMON)' }), null)).toBeNull()
    expect(controlView(src({ state: 'error' }), null)).toBeNull()
    expect(controlView(src({ state: 'standby' }), null)).toMatchObject({ action: 'suspend' })
  })

  it('tracks since when a request is pending, starting over when it changes', () => {
    const since = new Map()
    const a = src({ suspend_requested: true })
    trackPending(since, [a, src({ name: 'procfs.disk' })], 1000)
    expect([...since.keys()]).toEqual([sourceKey(a)])
    trackPending(since, [a], 5000)
    expect(since.get(sourceKey(a))).toEqual({ action: 'suspend', at: 1000 })
    trackPending(since, [src({ state: 'suspended' })], 6000)
    expect(since.get(sourceKey(a))).toEqual({ action: 'resume', at: 6000 })
    trackPending(since, [src({})], 7000)
    expect(since.size).toBe(0)
  })

  it('replaces one source with the answer of a request', () => {
    const list: SourceList = { sources: [src({}), src({ name: 'procfs.disk' }), src({ agent: 'other' })], families: {} }
    const next = withSource(list, src({ suspend_requested: true }))
    expect(next.sources.map((s) => s.suspend_requested)).toEqual([true, false, false])
    expect(list.sources[0]!.suspend_requested).toBe(false)
  })
})

const list: SourceList = {
  agents: [
    { agent: 'nas1/procfs+bpf', last_seen: 1000, cpu_pct: 12.345, rss_bytes: 3 * 2 ** 20, queue_frames: 5, queue_bytes: 3164, dropped_frames: 0, in_process: true, clock_skewed: false },
    { agent: 'b-remote', last_seen: 900, in_process: false, clock_skewed: false },
  ],
  sources: [
    src({ name: 'procfs.disk', state: 'standby', reason: 'bpf.disk is active and measures the same, in more detail', suspendable: false }),
    src({ name: 'bpf.disk', cost: bpfCost }),
    src({ agent: 'demo/synthetic', name: 'synthetic.nfs', families: ['nfs'], demo: true, last_seen: 998, suspendable: false }),
    src({ agent: 'b-remote', name: 'bpf.nfsd', families: ['nfs'], state: 'off', reason: 'needs root (CAP_BPF and CAP_PERFMON)', last_seen: 900 }),
  ],
  families: { nfs: true, disk: true, cpu: false, tcp: false },
  missing: { cpu: 'no agent reports it', tcp: 'bpf.net: needs root' },
}

describe('agents', () => {
  it('groups sources under their agent, with agents known only from sources', () => {
    const views = agentViews(list, 1005)
    expect(views.map((v) => v.agent)).toEqual(['b-remote', 'demo/synthetic', 'nas1/procfs+bpf'])
    const local = views[2]!
    expect(local.sources.map((s) => s.name)).toEqual(['bpf.disk', 'procfs.disk'])
    expect(local.stats?.in_process).toBe(true)
    expect(views[1]!.stats).toBeNull()
    expect(views[1]!.lastSeen).toBe(998)
  })
  it(`marks an agent stale after ${STALE_AFTER_S} s without a report`, () => {
    const at = (now: number) => Object.fromEntries(agentViews(list, now).map((v) => [v.agent, v.stale]))
    expect(at(1005)).toEqual({ 'b-remote': true, 'demo/synthetic': false, 'nas1/procfs+bpf': false })
    expect(at(1000 + STALE_AFTER_S)['nas1/procfs+bpf']).toBe(false)
    expect(at(1000 + STALE_AFTER_S + 1)['nas1/procfs+bpf']).toBe(true)
  })
  it('formats an agent\'s own cost, and dashes for what it did not report', () => {
    expect(agentFigures(list.agents![0]!)).toEqual({ cpu: '12.3 %', rss: '3 MiB', queue: '5 frames (3.09 KiB)', dropped: '0', clock: '–', clockSkewed: false })
    expect(agentFigures(list.agents![1]!)).toEqual({ cpu: '–', rss: '–', queue: '–', dropped: '–', clock: '–', clockSkewed: false })
    expect(agentFigures({ agent: 'x', last_seen: 1, queue_frames: 1, in_process: false, clock_skewed: false }).queue).toBe('1 frame')
  })
  it.each([
    [37.2, true, '+37.2 s'],
    [-900, true, '−900 s'],
    [0.0123, false, '+0.012 s'],
    [0, false, '0 s'],
  ])('shows a clock offset of %d s (skewed: %s) as %s', (off, skewed, text) => {
    const f = agentFigures({ agent: 'x', last_seen: 1, in_process: false, clock_offset_s: off, clock_skewed: skewed })
    expect([f.clock, f.clockSkewed]).toEqual([text, skewed])
  })
  it('says how long ago', () => {
    expect(formatAgo(0.4)).toBe('now')
    expect(formatAgo(-3)).toBe('now')
    expect(formatAgo(16.7)).toBe('16 s ago')
    expect(formatAgo(600)).toBe('10 min ago')
    expect(formatAgo(3 * 3600)).toBe('3 h ago')
    expect(formatAgo(3 * 86400)).toBe('3 d ago')
  })
})

describe('families', () => {
  it('gives the reason of an empty family and the sources of a fed one', () => {
    expect(familyRows(list)).toEqual([
      { family: 'nfs', ok: true, detail: 'synthetic.nfs' },
      { family: 'disk', ok: true, detail: 'bpf.disk' },
      { family: 'cpu', ok: false, detail: 'no agent reports it' },
      { family: 'tcp', ok: false, detail: 'bpf.net: needs root' },
    ])
    expect(familyRows({ ...list, missing: {} }).find((r) => r.family === 'cpu')!.detail).toBe('no active source')
  })
})

describe('cost history', () => {
  it('keeps each active probe\'s BPF CPU once per report, up to a limit', () => {
    const h = new Map<string, CostSample[]>()
    const disk = (t: number, pct: number) => src({ last_seen: t, cost: { ...bpfCost, bpf_cpu_pct: pct } })
    recordCosts(h, [disk(1, 0.1), src({ name: 'procfs.disk' })])
    recordCosts(h, [disk(1, 0.1)])
    recordCosts(h, [disk(2, 0.2)], 3)
    recordCosts(h, [disk(3, 0.3)], 3)
    recordCosts(h, [disk(4, 0.4)], 3)
    expect([...h.keys()]).toEqual([sourceKey(src({}))])
    expect(h.get(sourceKey(src({})))).toEqual([{ ts: 2, value: 0.2 }, { ts: 3, value: 0.3 }, { ts: 4, value: 0.4 }])
  })
})

describe('the page URL', () => {
  it('round-trips agent and state, escaping the agent id', () => {
    const view = { agent: 'nas 1/procfs+bpf&x', state: 'suspended' as const }
    const search = encodeSourcesView(view)
    expect(search).toBe('?agent=nas%201%2Fprocfs%2Bbpf%26x&state=suspended')
    expect(decodeSourcesView(search)).toEqual({ view, warnings: [] })
    expect(encodeSourcesView({ agent: null, state: null })).toBe('')
  })
  it('never throws, and says what it dropped', () => {
    const { view, warnings } = decodeSourcesView('?state=sleeping&agent=%E0%A4%A&s=nfs.ops&range=1h')
    expect(view).toEqual({ agent: null, state: null })
    expect(warnings).toHaveLength(2)
    expect(warnings[0]).toMatch(/state "sleeping" is not one of active, standby, suspended, off, error/)
    expect(warnings[1]).toMatch(/agent .* cannot be read/)
  })
  it('filters agents and sources', () => {
    const views = agentViews(list, 1005)
    expect(filterAgents(views, { agent: 'b-remote', state: null }).map((a) => a.agent)).toEqual(['b-remote'])
    const standby = filterAgents(views, { agent: null, state: 'standby' })
    expect(standby.map((a) => [a.agent, a.sources.map((s) => s.name)])).toEqual([['nas1/procfs+bpf', ['procfs.disk']]])
    expect(filterAgents(views, { agent: 'nobody', state: null })).toEqual([])
    expect(stateCounts(list.sources)).toEqual({ active: 2, standby: 1, suspended: 0, off: 1, error: 0 })
  })
})
