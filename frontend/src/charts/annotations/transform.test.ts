import { describe, expect, it } from 'vitest'
import type { EventPublic, RunPublic } from '../../api/client'
import { annotationSeries, annotationsText, categorySpans, clipAnnotations, eventAnnotations, runAnnotations } from './transform'

const run = (over: Partial<RunPublic>): RunPublic => ({
  id: 'a1', name: 'r', host: null, start: 100, end: 200, running: false, created: 100, command: null, exit_code: null, results: [], ...over,
})

describe('run annotations', () => {
  it('a running run reaches now', () => {
    expect(runAnnotations([run({}), run({ name: 'live', end: null, running: true, start: 300 })], 400)).toEqual([
      { label: 'r', from: 100, to: 200 },
      { label: 'live (running)', from: 300, to: 400 },
    ])
    expect(runAnnotations(undefined, 1)).toEqual([])
  })
  it.each([
    [{ from: 100, to: 200 }, 150, 300, [{ from: 150, to: 200 }]],
    [{ from: 100, to: 200 }, 0, 150, [{ from: 100, to: 150 }]],
    [{ from: 100, to: 200 }, 200, 300, []],
    [{ from: 100, to: 200 }, 0, 99, []],
  ])('%j clipped to [%d, %d]', (a, first, last, want) => {
    expect(clipAnnotations([{ label: 'x', ...a }], first, last).map(({ from, to }) => ({ from, to }))).toEqual(want)
  })
  it('category spans cover the points a run touches, edge to edge', () => {
    const ts = [0, 10, 20, 30, 40]
    expect(categorySpans([{ label: 'x', from: 12, to: 31 }], ts, 10)).toEqual([{ label: 'x', lo: 0.5, hi: 3.5 }])
    expect(categorySpans([{ label: 'x', from: 50, to: 60 }], ts, 10)).toEqual([])
  })
  it('names the runs for screen readers', () => {
    expect(annotationsText([])).toBe('')
    expect(annotationsText([{ label: 'a', from: 0, to: 1 }, { label: 'b', from: 2, to: 3 }])).toBe('; runs marked: a, b')
  })
})

const ev = (over: Partial<EventPublic>): EventPublic => ({
  id: 1, at: 100, kind: 'alert.fired', subject: 'r1', label: 'busy', message: '', value: 1, threshold: 0, opened_by: null,
  until: null, delivery: 'none', attempts: 0, next_attempt: null, ...over,
})

describe('event annotations', () => {
  it('an alert spans from firing to clearing, or to now while open; agents mark one second', () => {
    const got = eventAnnotations([
      ev({ until: 160 }),
      ev({ id: 2, at: 300, label: 'slow' }),
      ev({ id: 3, kind: 'alert.cleared', at: 160 }),
      ev({ id: 4, kind: 'agent.disconnected', at: 250, label: 'a1 (nas1)' }),
      ev({ id: 5, kind: 'alert.test', at: 260 }),
      ev({ id: 6, at: 320, label: 'busy clients', dim: 'client', element: '10.0.0.7' }),
    ], 400)
    expect(got).toEqual([
      { label: 'alert: busy', from: 100, to: 160, kind: 'alert' },
      { label: 'alert: slow (open)', from: 300, to: 400, kind: 'alert' },
      { label: 'a1 (nas1) disconnected', from: 250, to: 251, kind: 'agent' },
      { label: 'alert: busy clients: client 10.0.0.7 (open)', from: 320, to: 400, kind: 'alert' },
    ])
  })
  it("a per-client alert's span names its client", () => {
    const e = ev({ label: 'busy clients', dim: 'client', element: '10.0.0.7', until: 160 })
    expect(eventAnnotations([e], 400, { '10.0.0.7': 'nfs-a' })[0]!.label).toBe('alert: busy clients: client nfs-a')
    expect(eventAnnotations([e], 400)[0]!.label).toBe('alert: busy clients: client 10.0.0.7')
  })
  it('each kind draws in its own colour and keeps its kind through category spans', () => {
    const s = annotationSeries([['r', 0, 1], ['a', 2, 3, 'alert']])
    const [run, alert] = s.markArea.data.map(([a]) => (a.itemStyle ?? s.markArea.itemStyle) as { borderColor: string })
    expect(run!.borderColor).not.toBe(alert!.borderColor)
    expect(categorySpans([{ label: 'x', from: 0, to: 10, kind: 'alert' }], [0, 10], 10)[0]!.kind).toBe('alert')
  })
  it('names each kind for screen readers', () => {
    expect(annotationsText([{ label: 'r', from: 0, to: 1 }, { label: 'alert: busy', from: 0, to: 1, kind: 'alert' }, { label: 'a up', from: 0, to: 1, kind: 'agent' }]))
      .toBe('; runs marked: r; alerts marked: alert: busy; agent events: a up')
  })
})
