import { describe, expect, it } from 'vitest'
import type { QueryResult } from '../../api/client'
import { ANNOTATION_KEY } from '../annotations/transform'
import { PALETTE, TOTAL_COLOR } from '../palette'
import { OTHER_KEY, TOTAL_KEY, type LiveMessage } from './model'
import {
  addLive,
  arrangeLegend,
  addMissing,
  fromQuery,
  isEmpty,
  legendRows,
  liveFromQuery,
  liveKeepFrom,
  MAX_KEY,
  mergeLive,
  MIN_KEY,
  minMaxOf,
  minMaxSeries,
  missingSpan,
  stackedSeries,
  toCsv,
  toOption,
} from './transform'

function query(over: Partial<QueryResult> = {}): QueryResult {
  return {
    statistic: { metric: 'nfs.ops', by: 'client', where: {}, name: 'NFS operations per second broken down by client', unit: 'ops/s' },
    tier: 'second',
    step: 1,
    start: 100,
    end: 104,
    timestamps: [100, 101, 102, 103],
    total: [10, 20, 30, 40],
    series: [
      { key: '10.0.0.7', values: [6, 12, 18, 20], total: 14, last: 20 },
      { key: '10.0.0.9', values: [3, 5, 10, 10], total: 7, last: 10 },
    ],
    other: [1, 3, 2, 10],
    elements: 5,
    approximate: false,
    notes: [],
    ...over,
  }
}

const live = (ts: number, a: number, b: number, other: number): LiveMessage => ({
  id: 'c1',
  ts,
  total: a + b + other,
  values: { '10.0.0.7': a, '10.0.0.9': b },
  other,
})

describe('fromQuery + stackedSeries', () => {
  it('stacks the elements and other so that they sum to the total', () => {
    const d = fromQuery(query())
    const stack = stackedSeries(d)
    expect(stack.map((s) => s.name)).toEqual(['10.0.0.7', '10.0.0.9', 'other'])
    d.timestamps.forEach((_, t) => {
      expect(stack.reduce((s, x) => s + x.values[t]!, 0)).toBeCloseTo(d.total[t]!)
    })
  })

  it('draws the total alone without a breakdown', () => {
    const d = fromQuery(query({ series: [], other: null }))
    expect(stackedSeries(d)).toEqual([{ key: TOTAL_KEY, name: 'total', column: 'total', color: TOTAL_COLOR, values: [10, 20, 30, 40] }])
  })
})

describe('named clients', () => {
  const named = () => fromQuery(query({ names: { '10.0.0.7': 'nfs-a' } }))

  it('show the name in the legend, the address on hover, and keep the address as the key', () => {
    const rows = legendRows(named())
    expect(rows.slice(0, 2)).toMatchObject([
      { key: '10.0.0.7', element: '10.0.0.7', label: 'nfs-a', hover: 'nfs-a (10.0.0.7)', drillable: true },
      { key: '10.0.0.9', element: '10.0.0.9', label: '10.0.0.9', hover: '10.0.0.9', drillable: true },
    ])
  })

  it('show name and address in the tooltip and keep addresses in the CSV', () => {
    const d = named()
    expect(stackedSeries(d).map((s) => s.name)).toEqual(['nfs-a (10.0.0.7)', '10.0.0.9', 'other'])
    expect(toCsv(d).split(/\r?\n/)[0]).toBe('time,unix,10.0.0.7,10.0.0.9,other,total')
  })

  it('are found by name or by address, and sorted by what is shown', () => {
    const rows = legendRows(named())
    expect(arrangeLegend(rows, 'mean', true, 'NFS-A').map((r) => r.key)).toEqual(['10.0.0.7'])
    expect(arrangeLegend(rows, 'mean', true, '0.0.7').map((r) => r.key)).toEqual(['10.0.0.7'])
    expect(arrangeLegend(rows, 'name', false).map((r) => r.label)).toEqual(['10.0.0.9', 'nfs-a', 'other'])
  })

  it('name only client keys: an op breakdown filtered by a client leaves its ops alone', () => {
    const q = query({
      statistic: { metric: 'nfs.ops', by: 'op', where: { client: ['10.0.0.7'] }, name: 'x', unit: 'ops/s' },
      series: [{ key: '10.0.0.7', values: [1, 1, 1, 1], total: 1, last: 1 }],
      names: { '10.0.0.7': 'nfs-a' },
    })
    expect(legendRows(fromQuery(q))[0]).toMatchObject({ label: '10.0.0.7', hover: '10.0.0.7' })
  })

  it('keep their names as live seconds arrive', () => {
    const merged = mergeLive(named(), [live(104, 1, 1, 1)], 60)
    expect(merged.timestamps.at(-1)).toBe(104)
    expect(legendRows(merged)[0]).toMatchObject({ key: '10.0.0.7', label: 'nfs-a' })
  })
})

describe('toOption', () => {
  it('marks runs in a series of their own, clipped to the chart, and leaves the stack alone', () => {
    const annotations = [
      { label: 'stream write', from: 90, to: 102 },
      { label: 'later', from: 200, to: 300 },
    ]
    const opt = toOption(fromQuery(query()), { display: 'area', unit: 'ops/s', annotations })
    const series = opt.series as { id: string; stack?: string; data: unknown[]; markArea?: { data: { xAxis: number; name?: string }[][] } }[]
    expect(series).toHaveLength(4)
    const runs = series[3]!
    expect(runs.id).toBe(ANNOTATION_KEY)
    expect(runs.stack).toBeUndefined()
    expect(runs.data).toEqual([])
    expect(runs.markArea!.data).toEqual([[{ name: 'stream write', xAxis: 100_000 }, { xAxis: 102_000 }]])
    expect((toOption(fromQuery(query()), { display: 'area', unit: 'ops/s', annotations: [annotations[1]!] }).series as unknown[]).length).toBe(3)
  })

  it('builds stacked lttb-sampled areas on a time axis', () => {
    const opt = toOption(fromQuery(query()), { display: 'area', unit: 'ops/s' })
    const series = opt.series as { stack?: string; sampling?: string; data: number[][]; areaStyle?: unknown; name: string }[]
    expect(series).toHaveLength(3)
    expect(series.every((s) => s.stack === 'total' && s.sampling === 'lttb' && s.areaStyle)).toBe(true)
    expect(series[0]!.data[0]).toEqual([100_000, 6])
    expect(series[2]!.name).toBe('other')
    expect((opt.xAxis as { min: number; max: number }).min).toBe(100_000)
    expect((opt.xAxis as { min: number; max: number }).max).toBe(103_000)
  })

  it('does not stack in line mode', () => {
    const opt = toOption(fromQuery(query()), { display: 'line', unit: 'ops/s' })
    const series = opt.series as { stack?: string; areaStyle?: unknown }[]
    expect(series.every((s) => s.stack === undefined && s.areaStyle === undefined)).toBe(true)
  })

  it('formats the tooltip in the metric unit', () => {
    const opt = toOption(fromQuery(query()), { display: 'area', unit: 'bytes/s' })
    const fmt = (opt.tooltip as { valueFormatter: (v: number) => string }).valueFormatter
    expect(fmt(1_500_000)).toBe('1.5 MB/s')
  })
})

describe('live seconds', () => {
  it('replace a second pushed again and drop old ones', () => {
    let list: LiveMessage[] = []
    list = addLive(list, live(104, 1, 1, 1), 100)
    list = addLive(list, live(105, 2, 2, 2), 100)
    list = addLive(list, live(104, 5, 5, 5), 100)
    expect(list.map((m) => [m.ts, m.total])).toEqual([[104, 15], [105, 6]])
    expect(addLive(list, live(99, 1, 1, 1), 100)).toHaveLength(2)
    expect(addLive(list, live(106, 1, 1, 1), 105).map((m) => m.ts)).toEqual([105, 106])
  })

  it('append points, replace the partial last point, and keep the range width', () => {
    const base = fromQuery(query())
    const merged = mergeLive(base, [live(103, 25, 10, 5), live(104, 30, 10, 0), live(106, 1, 2, 3)], 5)
    // 4 queried + 104, a zero-filled 105 and 106, then cut to the last 5 seconds.
    expect(merged.timestamps).toEqual([102, 103, 104, 105, 106])
    expect(merged.total).toEqual([30, 40, 40, 0, 6])
    expect(merged.values[0]).toEqual([18, 25, 30, 0, 1])
    expect(merged.other).toEqual([2, 5, 0, 0, 3])
    merged.timestamps.forEach((_, t) => {
      expect(merged.values[0]![t]! + merged.values[1]![t]! + merged.other![t]!).toBeCloseTo(merged.total[t]!)
    })
    // The base is not changed.
    expect(base.timestamps).toHaveLength(4)
  })

  it('replace a late second inside the history at one second per point', () => {
    const merged = mergeLive(fromQuery(query()), [live(101, 50, 0, 0), live(90, 9, 9, 9)], 600)
    expect(merged.timestamps).toEqual([100, 101, 102, 103])
    expect(merged.total).toEqual([10, 50, 30, 40])
    expect(merged.values[0]).toEqual([6, 50, 18, 20])
    expect(merged.other).toEqual([1, 0, 2, 10])
  })

  it('are kept for the range at one second per point, else from the last step', () => {
    expect(liveKeepFrom(fromQuery(query()), 60)).toBe(43)
    expect(liveKeepFrom(fromQuery(query({ step: 10, timestamps: [100, 110] })), 3600)).toBe(100)
  })

  it('name the seconds to read again: the history tail and the gap before the first push', () => {
    const base = fromQuery(query())
    expect(missingSpan(base, [])).toBeNull()
    expect(missingSpan(base, [live(106, 1, 1, 1)], 2)).toEqual({ from: 102, to: 105 })
    expect(missingSpan(base, [live(104, 1, 1, 1)], 2)).toEqual({ from: 102, to: 103 })
    expect(missingSpan(base, [live(102, 1, 1, 1), live(103, 1, 1, 1), live(104, 1, 1, 1)], 2)).toBeNull()
    expect(missingSpan(fromQuery(query({ step: 10 })), [live(200, 1, 1, 1)])).toBeNull()
  })

  it('turn a query result into pushed seconds for the subscribed keys', () => {
    const msgs = liveFromQuery(query(), ['10.0.0.7', 'gone'], 'c1')
    expect(msgs).toHaveLength(4)
    expect(msgs[1]).toEqual({ id: 'c1', ts: 101, total: 20, values: { '10.0.0.7': 12, gone: 0 }, other: 8 })
    const noBy = liveFromQuery(query({ series: [], other: null }), [], 'c1')
    expect(noBy[3]).toEqual({ id: 'c1', ts: 103, total: 40, values: {}, other: null })
  })

  it('add seconds read again without overriding pushes', () => {
    const merged = addMissing([live(105, 9, 9, 9)], [live(104, 1, 1, 1), live(105, 1, 1, 1)])
    expect(merged.map((m) => [m.ts, m.total])).toEqual([[104, 3], [105, 27]])
  })

  it('average seconds within a coarser step', () => {
    const base = fromQuery(query({ step: 10, timestamps: [100, 110], total: [10, 4], series: [], other: null }))
    const merged = mergeLive(base, [
      { id: 'c', ts: 110, total: 20, values: {}, other: null },
      { id: 'c', ts: 111, total: 40, values: {}, other: null },
      { id: 'c', ts: 120, total: 5, values: {}, other: null },
      { id: 'c', ts: 95, total: 500, values: {}, other: null },
    ], 600)
    expect(merged.timestamps).toEqual([100, 110, 120])
    expect(merged.total).toEqual([10, 30, 5])
  })
})

describe('legendRows', () => {
  it('sorts elements by mean, puts other last, and computes last, mean and share', () => {
    const d = fromQuery(query({
      series: [
        { key: 'b', values: [1, 1, 1, 1], total: 1, last: 1 },
        { key: 'a', values: [2, 4, 6, 8], total: 5, last: 8 },
        { key: '', values: [7, 15, 23, 31], total: 19, last: 31 },
      ],
      other: [0, 0, 0, 0],
    }))
    const rows = legendRows(d)
    expect(rows.map((r) => r.label)).toEqual(['(none)', 'a', 'b'])
    expect(rows[1]).toMatchObject({ key: 'a', last: 8, mean: 5, share: 0.2, drillable: true, color: PALETTE[1] })
    expect(rows.reduce((s, r) => s + r.share, 0)).toBeCloseTo(1)
  })

  it('shows other when it has traffic, and the total without a breakdown', () => {
    const rows = legendRows(fromQuery(query()))
    expect(rows[rows.length - 1]).toMatchObject({ key: OTHER_KEY, label: 'other', mean: 4, drillable: false })
    const total = legendRows(fromQuery(query({ series: [], other: null })))
    expect(total).toEqual([{ key: TOTAL_KEY, element: 'total', label: 'total', hover: 'total', color: TOTAL_COLOR, last: 40, mean: 25, share: 1, drillable: false }])
  })

  it('knows an empty statistic', () => {
    expect(isEmpty(fromQuery(query({ total: [0, 0, 0, 0] })))).toBe(true)
    expect(isEmpty(fromQuery(query()))).toBe(false)
  })
})

describe('arrangeLegend', () => {
  const d = fromQuery(query({
    series: [
      { key: 'host10', values: [1, 1, 1, 9], total: 3, last: 9 },
      { key: 'host2', values: [5, 5, 5, 2], total: 4.25, last: 2 },
      { key: 'Alpha', values: [2, 2, 2, 2], total: 2, last: 2 },
    ],
    other: [1, 1, 1, 1],
  }))
  const rows = legendRows(d)
  const labels = (rs: { label: string }[]) => rs.map((r) => r.label)

  it.each([
    ['mean', true, ['host2', 'host10', 'Alpha', 'other']],
    ['mean', false, ['Alpha', 'host10', 'host2', 'other']],
    ['last', true, ['host10', 'Alpha', 'host2', 'other']],
    ['name', false, ['Alpha', 'host2', 'host10', 'other']], // numbers in names in numeric order
    ['name', true, ['host10', 'host2', 'Alpha', 'other']],
  ] as const)('sorts by %s (descending: %s), other last', (sort, desc, want) => {
    expect(labels(arrangeLegend(rows, sort, desc))).toEqual(want)
  })

  it('keeps the rows whose label holds the search, in any case', () => {
    expect(labels(arrangeLegend(rows, 'mean', true, 'HOST'))).toEqual(['host2', 'host10'])
    expect(labels(arrangeLegend(rows, 'mean', true, '  alp '))).toEqual(['Alpha'])
    expect(labels(arrangeLegend(rows, 'mean', true, 'oth'))).toEqual(['other'])
    expect(arrangeLegend(rows, 'mean', true, 'nothing like it')).toEqual([])
    expect(rows.map((r) => r.label)).toEqual(['host2', 'host10', 'Alpha', 'other']) // the input is not reordered
  })
})

describe('highlight', () => {
  type S = { id: string; areaStyle?: { opacity: number }; lineStyle: { width: number; opacity: number } }
  it('draws the highlighted element bright and fades the others', () => {
    const opt = toOption(fromQuery(query()), { display: 'area', unit: 'ops/s', highlight: '10.0.0.9' })
    const byId = new Map((opt.series as S[]).map((s) => [s.id, s]))
    expect(byId.get('10.0.0.9')).toMatchObject({ areaStyle: { opacity: 0.95 }, lineStyle: { width: 2.4, opacity: 1 } })
    expect(byId.get('10.0.0.7')).toMatchObject({ areaStyle: { opacity: 0.12 }, lineStyle: { opacity: 0.25 } })
    expect(byId.get(OTHER_KEY)!.areaStyle!.opacity).toBe(0.12)
  })
  it('draws every element alike without one', () => {
    const opt = toOption(fromQuery(query()), { display: 'area', unit: 'ops/s', highlight: null })
    const ops = (opt.series as S[]).map((s) => s.areaStyle!.opacity)
    expect(ops).toEqual([0.75, 0.75, 0.55])
  })
})

describe('toCsv', () => {
  it('writes a row per point: time, unix, each element, other, total', () => {
    const csv = toCsv(fromQuery(query({ series: [{ key: '=evil,client', values: [6, 12, 18, 20], total: 14, last: 20 }] })))
    const lines = csv.trimEnd().split('\r\n')
    expect(lines[0]).toBe('time,unix,"\'=evil,client",other,total')
    expect(lines[1]).toBe('1970-01-01T00:01:40.000Z,100,6,1,10')
    expect(lines).toHaveLength(5)
  })
  it('has just the total without a breakdown', () => {
    expect(toCsv(fromQuery(query({ series: [], other: null }))).split('\r\n')[0]).toBe('time,unix,total')
  })
})

describe('min/max of coarse points', () => {
  it('draws the busiest and quietest seconds as two dashed lines outside the stack', () => {
    const mm = minMaxOf({ timestamps: [60, 120], total_min: [1, 2], total_max: [9, 8] })!
    expect(mm).toEqual({ timestamps: [60, 120], min: [1, 2], max: [9, 8] })
    const [max, min] = minMaxSeries(mm)
    expect(max!.data).toEqual([[60_000, 9], [120_000, 8]])
    expect(min!.data).toEqual([[60_000, 1], [120_000, 2]])
    expect([max!.name, min!.name]).toEqual(['max second', 'min second'])
    expect(max!.stack).toBeUndefined()
    const opt = toOption(fromQuery(query()), { display: 'area', unit: 'ops/s', minmax: mm })
    expect((opt.series as { id?: string }[]).map((s) => s.id).slice(-2)).toEqual([MAX_KEY, MIN_KEY])
  })
  it('has none without the query asking', () => {
    expect(minMaxOf({ timestamps: [60], total_min: null, total_max: null })).toBeNull()
    expect(minMaxOf({ timestamps: [60] })).toBeNull()
  })
})
