// Pure transforms: API query result + live seconds -> chart data, ECharts option, legend rows.
import type { QueryResult } from '../../api/client'
import type { ChartOption, LineSeries } from '../../components/EChart'
import { annotationSeries, clipAnnotations } from '../annotations/transform'
import { csvLines } from '../../lib/csv'
import { formatAxis, formatRate, formatTick } from '../../lib/format'
import { elementHover, elementName } from '../../lib/names'
import { CHART, colorOf, elementLabel, OTHER_COLOR, TOTAL_COLOR } from '../palette'
import { OTHER_KEY, TOTAL_KEY, type LegendRow, type LegendSort, type LiveMessage, type MinMax, type TimeseriesData, type TimeseriesOptions } from './model'

export function fromQuery(q: QueryResult): TimeseriesData {
  return {
    step: q.step,
    timestamps: [...q.timestamps],
    total: [...q.total],
    keys: q.series.map((s) => s.key),
    values: q.series.map((s) => [...s.values]),
    other: q.other ? [...q.other] : null,
    by: q.statistic.by ?? null,
    names: q.names ?? {},
  }
}

/** Add one pushed second: a second pushed again replaces the earlier push; older than `keepFrom` drops. */
export function addLive(list: LiveMessage[], msg: LiveMessage, keepFrom: number): LiveMessage[] {
  const out = list.filter((m) => m.ts !== msg.ts && m.ts >= keepFrom)
  if (msg.ts >= keepFrom) out.push(msg)
  out.sort((a, b) => a.ts - b.ts)
  return out
}

function mean(xs: number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0
}

/**
 * Merge live seconds into the queried history. Seconds fall into the step bucket
 * `ts - ts % step`; a bucket at or after the last queried one takes the mean of its
 * live seconds (the queried last bucket may be partial). At one second per point a
 * late second inside the history replaces its point too. Points older than
 * `rangeSeconds` before the newest are dropped, so the chart keeps its width.
 */
export function mergeLive(base: TimeseriesData, live: LiveMessage[], rangeSeconds: number): TimeseriesData {
  const step = Math.max(1, base.step)
  const lastBase = base.timestamps.length ? base.timestamps[base.timestamps.length - 1]! : -Infinity
  const buckets = new Map<number, LiveMessage[]>()
  for (const m of live) {
    const b = m.ts - (((m.ts % step) + step) % step)
    if (b < lastBase && step > 1) continue
    const list = buckets.get(b) ?? []
    list.push(m)
    buckets.set(b, list)
  }
  if (buckets.size === 0) return trim(base, rangeSeconds)
  const out: TimeseriesData = {
    ...base,
    step,
    timestamps: [...base.timestamps],
    total: [...base.total],
    keys: base.keys,
    values: base.values.map((v) => [...v]),
    other: base.other ? [...base.other] : null,
  }
  for (const b of [...buckets.keys()].sort((x, y) => x - y)) {
    const msgs = buckets.get(b)!
    let i = out.timestamps.lastIndexOf(b)
    if (i < 0 && b < lastBase) continue // before the history: nothing to replace
    if (i < 0) {
      // Fill skipped buckets with zeros so the time axis stays regular.
      const prev = out.timestamps.length ? out.timestamps[out.timestamps.length - 1]! : b - step
      for (let t = prev + step; t < b; t += step) pushPoint(out, t)
      pushPoint(out, b)
      i = out.timestamps.length - 1
    }
    out.total[i] = mean(msgs.map((m) => m.total))
    out.keys.forEach((k, j) => {
      out.values[j]![i] = mean(msgs.map((m) => m.values[k] ?? 0))
    })
    if (out.other) {
      const keysSum = (m: LiveMessage) => out.keys.reduce((s, k) => s + (m.values[k] ?? 0), 0)
      out.other[i] = mean(msgs.map((m) => m.other ?? Math.max(0, m.total - keysSum(m))))
    }
  }
  return trim(out, rangeSeconds)
}

function pushPoint(d: TimeseriesData, t: number) {
  d.timestamps.push(t)
  d.total.push(0)
  d.values.forEach((v) => v.push(0))
  d.other?.push(0)
}

function trim(d: TimeseriesData, rangeSeconds: number): TimeseriesData {
  const n = d.timestamps.length
  if (!n) return d
  const from = d.timestamps[n - 1]! - rangeSeconds + d.step
  const cut = d.timestamps.findIndex((t) => t >= from)
  if (cut <= 0) return d
  return {
    ...d,
    timestamps: d.timestamps.slice(cut),
    total: d.total.slice(cut),
    values: d.values.map((v) => v.slice(cut)),
    other: d.other ? d.other.slice(cut) : null,
  }
}

/**
 * The seconds to read again once pushes arrive: the history's last `lookback`
 * seconds (they may not all have been stored when it was read) and any second
 * between the history and the first push (stored before the subscription began,
 * so never pushed). Null when nothing is missing or at coarser steps.
 */
export function missingSpan(base: TimeseriesData, live: LiveMessage[], lookback = 5): { from: number; to: number } | null {
  const last = base.timestamps[base.timestamps.length - 1]
  if (last === undefined || base.step > 1 || !live.length) return null
  const seen = new Set(live.map((m) => m.ts))
  const first = Math.min(...live.map((m) => m.ts))
  let from: number | null = null
  let to: number | null = null
  for (let t = last - lookback + 1; t < first; t++) {
    if (seen.has(t)) continue
    from ??= t
    to = t
  }
  return from === null || to === null ? null : { from, to }
}

/** Seconds of a query result as if they had been pushed, for the subscribed keys. */
export function liveFromQuery(q: QueryResult, keys: string[], id: string): LiveMessage[] {
  const byKey = new Map(q.series.map((s) => [s.key, s.values]))
  return q.timestamps.map((ts, t) => {
    const values: Record<string, number> = {}
    let sum = 0
    for (const k of keys) {
      const v = byKey.get(k)?.[t] ?? 0
      values[k] = v
      sum += v
    }
    const total = q.total[t] ?? 0
    return { id, ts, total, values, other: q.other ? Math.max(0, total - sum) : null }
  })
}

/** Add seconds read again, without overriding a push that arrived meanwhile. */
export function addMissing(list: LiveMessage[], msgs: LiveMessage[]): LiveMessage[] {
  const seen = new Set(list.map((m) => m.ts))
  return [...list, ...msgs.filter((m) => !seen.has(m.ts))].sort((a, b) => a.ts - b.ts)
}

/** The oldest live second still worth keeping for `mergeLive`. */
export function liveKeepFrom(base: TimeseriesData, rangeSeconds: number): number {
  const last = base.timestamps[base.timestamps.length - 1] ?? 0
  return base.step > 1 ? last - base.step : last - rangeSeconds
}

export function isEmpty(d: TimeseriesData): boolean {
  return d.total.every((v) => !v)
}

/** Legend rows: elements by mean over the range (largest first), "other" last. */
export function legendRows(d: TimeseriesData): LegendRow[] {
  const totalMean = mean(d.total)
  const last = (xs: number[]) => (xs.length ? xs[xs.length - 1]! : 0)
  const row = (key: string, element: string, color: string, xs: number[], drillable: boolean): LegendRow => {
    const m = mean(xs)
    const named = drillable ? { label: elementName(d.by, key, d.names), hover: elementHover(d.by, key, d.names) } : { label: element, hover: element }
    return { key, element, ...named, color, last: last(xs), mean: m, share: totalMean ? m / totalMean : 0, drillable }
  }
  if (!d.keys.length) return [row(TOTAL_KEY, 'total', TOTAL_COLOR, d.total, false)]
  const rows = d.keys.map((k, i) => row(k, elementLabel(k), colorOf(i), d.values[i] ?? [], true))
  rows.sort((a, b) => b.mean - a.mean || a.label.localeCompare(b.label))
  if (d.other && d.other.some((v) => v > 0)) rows.push(row(OTHER_KEY, 'other', OTHER_COLOR, d.other, false))
  return rows
}

/**
 * The stacked series of a chart: each element, then "other"; their sum is the total. `name` is
 * what the tooltip shows (a named client with its address), `column` the element as the API
 * names it, for CSV.
 */
export function stackedSeries(d: TimeseriesData): { key: string; name: string; column: string; color: string; values: number[] }[] {
  if (!d.keys.length) return [{ key: TOTAL_KEY, name: 'total', column: 'total', color: TOTAL_COLOR, values: d.total }]
  const out = d.keys.map((k, i) => ({ key: k, name: elementHover(d.by, k, d.names), column: elementLabel(k), color: colorOf(i), values: d.values[i] ?? [] }))
  if (d.other) out.push({ key: OTHER_KEY, name: 'other', column: 'other', color: OTHER_COLOR, values: d.other })
  return out
}

/**
 * The legend as the user ordered it: by mean over the range (the default, largest first), by
 * the newest value, or by name; "other" stays last. `query` keeps the rows whose label or
 * address holds it (case-insensitive).
 */
export function arrangeLegend(rows: LegendRow[], sort: LegendSort, desc: boolean, query = ''): LegendRow[] {
  const q = query.trim().toLowerCase()
  const keep = rows.filter((r) => r.key !== OTHER_KEY && (!q || r.hover.toLowerCase().includes(q)))
  const byName = (a: LegendRow, b: LegendRow) => a.label.localeCompare(b.label, undefined, { numeric: true })
  const primary = (a: LegendRow, b: LegendRow) => (sort === 'name' ? byName(a, b) : a[sort] - b[sort])
  keep.sort((a, b) => (desc ? -primary(a, b) : primary(a, b)) || byName(a, b)) // ties: by name
  const other = rows.find((r) => r.key === OTHER_KEY)
  return other && (!q || 'other'.includes(q)) ? [...keep, other] : keep
}

/** Style of a series: bright when it is the highlighted one, faded when another is. */
function emphasis(key: string, area: boolean, highlight: string | null | undefined) {
  const base = key === OTHER_KEY ? 0.55 : 0.75
  if (!highlight) return { area: base, line: 1, width: area ? 0.8 : 1.6 }
  return key === highlight ? { area: 0.95, line: 1, width: 2.4 } : { area: 0.12, line: 0.25, width: area ? 0.8 : 1.2 }
}

export const MIN_KEY = '\u0000min'
export const MAX_KEY = '\u0000max'

/** The busiest and the quietest second inside each point, as two dashed lines outside any stack
 * (a coarse point's mean hides a burst; these show it). */
export function minMaxSeries(mm: MinMax): LineSeries[] {
  return ([
    [MAX_KEY, 'max second', mm.max],
    [MIN_KEY, 'min second', mm.min],
  ] as const).map(([id, name, values]) => ({
    type: 'line',
    id,
    name,
    data: values.map((v, t) => [mm.timestamps[t]! * 1000, v]),
    color: CHART.minmax,
    lineStyle: { width: 1.3, type: 'dashed' },
    showSymbol: false,
    symbol: 'none',
    z: 3,
  }))
}

/** The query's min/max as the chart draws it, or null when it has none. */
export function minMaxOf(q: { timestamps: number[]; total_min?: number[] | null; total_max?: number[] | null }): MinMax | null {
  return q.total_min && q.total_max ? { timestamps: q.timestamps, min: q.total_min, max: q.total_max } : null
}

export function toOption(d: TimeseriesData, opts: TimeseriesOptions): ChartOption {
  const area = opts.display === 'area'
  const look = (key: string) => emphasis(key, area, opts.highlight)
  const series: LineSeries[] = stackedSeries(d).map((s) => ({
    type: 'line',
    id: s.key,
    name: s.name,
    data: s.values.map((v, t) => [d.timestamps[t]! * 1000, v]),
    stack: area ? 'total' : undefined,
    areaStyle: area ? { opacity: look(s.key).area } : undefined,
    lineStyle: { width: look(s.key).width, opacity: look(s.key).line },
    color: s.color,
    showSymbol: false,
    symbol: 'none',
    sampling: 'lttb',
    triggerLineEvent: true,
    emphasis: { focus: 'series' },
  }))
  if (opts.minmax) series.push(...minMaxSeries(opts.minmax))
  const first = d.timestamps[0]
  const last = d.timestamps[d.timestamps.length - 1]
  const span = first !== undefined && last !== undefined ? last - first : 0
  const marks = first !== undefined && last !== undefined ? clipAnnotations(opts.annotations ?? [], first, last + d.step) : []
  if (marks.length) {
    // A series of its own, with no data: the stack and the legend stay the elements'.
    series.push({ type: 'line', ...annotationSeries(marks.map((a) => [a.label, a.from * 1000, a.to * 1000, a.kind])) })
  }
  return {
    animation: false,
    grid: { left: 56, right: 16, top: 14, bottom: 28 },
    tooltip: {
      trigger: 'axis',
      confine: true,
      order: 'seriesDesc',
      valueFormatter: (v) => formatRate(typeof v === 'number' ? v : Number(v), opts.unit),
    },
    xAxis: {
      type: 'time',
      min: first !== undefined ? first * 1000 : undefined,
      max: last !== undefined ? last * 1000 : undefined,
      axisLabel: { color: CHART.text, hideOverlap: true, formatter: (v: number) => formatTick(v / 1000, span) },
      axisLine: { lineStyle: { color: CHART.axis } },
      splitLine: { show: false },
    },
    yAxis: {
      type: 'value',
      min: 0,
      axisLabel: { color: CHART.text, formatter: (v: number) => formatAxis(v, opts.unit) },
      splitLine: { lineStyle: { color: CHART.split } },
    },
    series,
  }
}

/** The chart's points as CSV: time (ISO 8601, UTC), unix second, then each element, other, total. */
export function toCsv(d: TimeseriesData): string {
  const series = d.keys.length ? stackedSeries(d) : []
  const head = ['time', 'unix', ...series.map((s) => s.column), 'total']
  const rows = d.timestamps.map((t, i) => [new Date(t * 1000).toISOString(), t, ...series.map((s) => s.values[i] ?? 0), d.total[i] ?? 0])
  return csvLines([head, ...rows])
}
