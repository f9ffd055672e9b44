import { describe, expect, it } from 'vitest'
import type { RunPublic } from '../../api/client'
import { annotationsText, categorySpans, clipAnnotations, runAnnotations } from './transform'

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
