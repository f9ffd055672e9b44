// Pure transforms: sparse heat-map cells -> ECharts heatmap option, bucket rates, bands.
import type { Bucket, HeatmapResult } from '../../api/client'
import type { ChartOption, HeatmapSeries, LineSeries } from '../../components/EChart'
import { annotationSeries, categorySpans, clipAnnotations } from '../annotations/transform'
import { csvLines } from '../../lib/csv'
import { formatAmount, formatDateTime, formatRate, formatTick } from '../../lib/format'
import { CHART, HEAT_COLORS } from '../palette'
import type { Band, BucketRate, HeatmapOptions, Span } from './model'

/** Axis label of a bucket: its lower bound ("1.05 ms", "8 KiB"); the open bottom bucket reads "0". */
export function bucketAxisLabel(b: Pick<Bucket, 'index' | 'lo'>, unit: string): string {
  return b.lo === 0 ? '0' : formatAmount(2 ** b.index, unit)
}

/** Sparse [time index, bucket index, rate] cells -> [x, y, log10(rate), rate]; empty cells stay absent. */
export function cellData(cells: number[][]): [number, number, number, number][] {
  const out: [number, number, number, number][] = []
  for (const [t, b, v] of cells) {
    if (t === undefined || b === undefined || v === undefined || !(v > 0)) continue
    out.push([t, b, Math.log10(v), v])
  }
  return out
}

/** log10 bounds of the colour scale over cellData (cellsRange of the cells they came from). */
export function colorRange(data: [number, number, number, number][]): { min: number; max: number } {
  return cellsRange(data.map(([t, b, , v]) => [t, b, v]))
}

/** log10 bounds of the colour scale over sparse [time, bucket, rate] cells; a flat map still gets a visible range. */
export function cellsRange(cells: number[][]): { min: number; max: number } {
  let min = Infinity
  let max = -Infinity
  for (const [, , v] of cells) {
    if (!(v! > 0)) continue
    const lg = Math.log10(v!)
    if (lg < min) min = lg
    if (lg > max) max = lg
  }
  if (min > max) return { min: 0, max: 1 }
  return { min: max - min < 0.5 ? max - 1 : min, max }
}

/**
 * A live heat map's colour range, widened to whole quarters of a decade (factors of about 1.8):
 * a second's new cells seldom cross one, so the colour key, and the chart drawn with it, stays.
 */
export function steadyRange(range: { min: number; max: number }): { min: number; max: number } {
  return { min: Math.floor(range.min * 4) / 4, max: Math.ceil(range.max * 4) / 4 }
}

/**
 * Heat maps to be read side by side, on one bucket axis and one colour scale: the buckets
 * any of them has, in order, so one row is one latency in all of them; cells moved to
 * their bucket's row.
 */
export function onSharedScales(results: HeatmapResult[]): { results: HeatmapResult[]; colors: { min: number; max: number } } {
  const known = new Map<number, Bucket>()
  for (const r of results) for (const b of r.buckets) known.set(b.index, b)
  const buckets = [...known.values()].sort((a, b) => a.index - b.index)
  const row = new Map(buckets.map((b, i) => [b.index, i]))
  const aligned = results.map((r) => ({
    ...r,
    buckets,
    cells: r.cells.map(([t, b, v]) => [t!, row.get(r.buckets[b!]!.index)!, v!]),
  }))
  return { results: aligned, colors: cellsRange(aligned.flatMap((r) => r.cells)) }
}

/** Position of a bucket exponent in the result's bucket list, or -1. */
export function bucketPosition(r: Pick<HeatmapResult, 'buckets'>, exponent: number): number {
  return r.buckets.findIndex((b) => b.index === exponent)
}

/**
 * First and last row of the drawn buckets that a band covers, or null when it covers none: a band
 * reaching past a zoom or a crop is marked over the part of it that is drawn.
 */
export function bandRows(r: Pick<HeatmapResult, 'buckets'>, band: Band): [number, number] | null {
  const first = r.buckets.findIndex((b) => b.index >= band.lo && b.index <= band.hi)
  if (first < 0) return null
  let last = first
  while (last + 1 < r.buckets.length && r.buckets[last + 1]!.index <= band.hi) last++
  return [first, last]
}

/** The first and last columns a span covers, or null when it covers none. */
export function spanColumns(r: Pick<HeatmapResult, 'timestamps' | 'step'>, span: Span): [number, number] | null {
  const first = r.timestamps.findIndex((t) => t + r.step > span.start)
  if (first < 0 || r.timestamps[first]! >= span.end) return null
  let last = first
  while (last + 1 < r.timestamps.length && r.timestamps[last + 1]! < span.end) last++
  return [first, last]
}

/** The span from column a to column b, in either order, whole columns. */
export function spanBetween(r: Pick<HeatmapResult, 'timestamps' | 'step'>, a: number, b: number): Span | null {
  const [lo, hi] = [Math.min(a, b), Math.max(a, b)]
  const start = r.timestamps[lo]
  const last = r.timestamps[hi]
  return start === undefined || last === undefined ? null : { start, end: last + r.step }
}

function categoryAxis(data: string[]) {
  return {
    type: 'category' as const,
    data,
    axisLabel: { color: CHART.text, hideOverlap: true },
    axisTick: { show: false },
    axisLine: { lineStyle: { color: CHART.axis } },
    splitArea: { show: false },
  }
}

/** The plot's margins inside a heat map's chart, px: the cells fill what is left. */
export const HEAT_GRID = { left: 70, right: 16, top: 12, bottom: 50 }

export function toHeatmapOption(r: HeatmapResult, opts: HeatmapOptions): ChartOption {
  const data = opts.raster ? [] : cellData(r.cells)
  const { min, max } = opts.colors ?? cellsRange(r.cells)
  const yLabels = r.buckets.map((b) => bucketAxisLabel(b, opts.valueUnit))
  const rows = opts.selection ? bandRows(r, opts.selection) : null
  const cols = opts.span ? spanColumns(r, opts.span) : null
  // With a raster beneath, no series draws cells: an empty line series carries the band, and the
  // time axis is a value axis of column positions (a category axis of ~800 columns costs ECharts
  // some 100 ms a redraw).
  const cells = opts.raster
    ? ({ type: 'line' as const, data: [] as never[] })
    : ({ type: 'heatmap' as const, data, encode: { x: 0, y: 1, value: 2 }, progressive: 0, emphasis: { itemStyle: { borderColor: CHART.cellLine, borderWidth: 1 } } })
  const series: HeatmapSeries | LineSeries = {
    ...cells,
    name: r.dim,
    markArea: rows
      ? {
          silent: true,
          itemStyle: { color: CHART.bandFill, borderColor: CHART.bandLine, borderWidth: 1.5 },
          // Category positions: the band covers its buckets' cells, edge to edge.
          data: [
            [
              { yAxis: rows[0] - 0.5, ...(cols ? { xAxis: cols[0] - 0.5 } : {}) },
              { yAxis: rows[1] + 0.5, ...(cols ? { xAxis: cols[1] + 0.5 } : {}) },
            ],
          ],
        }
      : undefined,
  }
  const last = r.timestamps[r.timestamps.length - 1]
  const marks = last === undefined ? [] : categorySpans(clipAnnotations(opts.annotations ?? [], r.start, last + r.step), r.timestamps, r.step)
  const runs: (HeatmapSeries | LineSeries)[] = marks.length
    ? [
        // A series of its own, with no cells: the band selection keeps the first one's markArea.
        { type: opts.raster ? 'line' : 'heatmap', ...annotationSeries(marks.map((m) => [m.label, m.lo, m.hi, m.kind])) },
      ]
    : []
  const span = r.end - r.start
  const pointer = { show: true, type: 'line' as const, triggerTooltip: false, label: { show: false }, lineStyle: { color: CHART.axis } }
  return {
    animation: false,
    grid: { ...HEAT_GRID },
    tooltip: {
      confine: true,
      formatter: (p: unknown) => {
        const d = (p as { data?: number[] }).data
        if (!d) return ''
        const [time, bucket, rate] = cellTip(r, d[0]!, d[1]!, d[3]!, opts.rateUnit)
        return `${time}<br/>${bucket}<br/><b>${rate}</b>`
      },
    },
    // the shared crosshair (axisPointer): a line at the time hovered here or on another chart of the worksheet
    xAxis: opts.raster
      ? {
          type: 'value',
          min: -0.5,
          max: r.timestamps.length - 0.5,
          minInterval: 1,
          axisLabel: {
            color: CHART.text,
            hideOverlap: true,
            formatter: (v: number) => (Number.isInteger(v) && r.timestamps[v] !== undefined ? formatTick(r.timestamps[v]!, span) : ''),
          },
          axisLine: { show: true, lineStyle: { color: CHART.axis } },
          splitLine: { show: false },
          axisPointer: pointer,
        }
      : {
          ...categoryAxis(r.timestamps.map((t) => formatTick(t, span))),
          // about ten time labels: ECharts' own choice measures every label
          axisLabel: { color: CHART.text, hideOverlap: true, interval: Math.max(0, Math.ceil(r.timestamps.length / 10) - 1) },
          axisPointer: pointer,
        },
    yAxis: categoryAxis(yLabels),
    visualMap: {
      type: 'continuous',
      dimension: 2,
      min,
      max,
      calculable: false,
      orient: 'horizontal',
      left: 'right',
      bottom: 0,
      itemHeight: 120,
      itemWidth: 10,
      text: [formatRate(10 ** max, opts.rateUnit), formatRate(10 ** min, opts.rateUnit)],
      textStyle: { color: CHART.text, fontSize: 11 },
      inRange: { color: HEAT_COLORS },
    },
    series: [series, ...runs],
  }
}

/** Mean rate of each bucket over the range, highest bucket first (as drawn, top to bottom). */
export function bucketRates(r: Pick<HeatmapResult, 'buckets' | 'cells' | 'timestamps'>): BucketRate[] {
  const n = Math.max(1, r.timestamps.length)
  const sums = new Array<number>(r.buckets.length).fill(0)
  for (const [, b, v] of r.cells) {
    if (b !== undefined && v !== undefined && b < sums.length) sums[b]! += v
  }
  const all = sums.reduce((a, b) => a + b, 0)
  return r.buckets
    .map((b, i) => ({ index: b.index, label: b.label, rate: sums[i]! / n, share: all ? sums[i]! / all : 0 }))
    .reverse()
}

/** The band spanned by two bucket exponents, in either order. */
export function bandBetween(a: number, b: number): Band {
  return { lo: Math.min(a, b), hi: Math.max(a, b) }
}

/** Mean rate in a band over the range. */
export function bandRate(rates: BucketRate[], band: Band): number {
  return rates.filter((r) => r.index >= band.lo && r.index <= band.hi).reduce((s, r) => s + r.rate, 0)
}

/** How a band reads in the side panel: "1.05 ms – 4.19 ms" from its buckets' API labels. */
export function bandLabel(buckets: Pick<Bucket, 'index' | 'lo' | 'hi' | 'label'>[], band: Band, unit: string): string {
  const lo = buckets.find((b) => b.index === band.lo)
  const hi = buckets.find((b) => b.index === band.hi)
  if (!lo || !hi) return ''
  if (band.lo === band.hi) return lo.label
  const from = lo.lo === 0 ? '0' : formatAmount(lo.lo, unit)
  const to = hi.hi === null || hi.hi === undefined ? '∞' : formatAmount(hi.hi, unit)
  return `${from} – ${to}`
}

/** Fishworks' "crop outliers" steps: hide the top 0.1 %, 1 % or 5 % of events, or nothing. */
export const CROPS = [0, 0.1, 1, 5] as const
export type Crop = (typeof CROPS)[number]

export function nextCrop(c: Crop): Crop {
  return CROPS[(CROPS.indexOf(c) + 1) % CROPS.length]!
}

/**
 * The heat map without its outliers: the highest buckets holding no more than `pct` % of the
 * events over the range are dropped, so the bulk gets the height. `hidden` is what they held,
 * as a mean rate, and `above` the first bucket hidden (null when nothing is).
 */
export function cropOutliers<R extends Pick<HeatmapResult, 'buckets' | 'cells' | 'timestamps'>>(
  r: R,
  pct: number,
): { result: R; hidden: number; above: Bucket | null } {
  if (!(pct > 0) || r.buckets.length < 2) return { result: r, hidden: 0, above: null }
  const sums = new Array<number>(r.buckets.length).fill(0)
  for (const [, b, v] of r.cells) if (b !== undefined && v !== undefined && b < sums.length) sums[b]! += v
  const all = sums.reduce((a, b) => a + b, 0)
  let keep = r.buckets.length
  let dropped = 0
  // drop from the top while what is dropped stays within pct of all events; keep at least one bucket
  while (keep > 1 && (dropped + sums[keep - 1]!) <= (all * pct) / 100) dropped += sums[--keep]!
  if (keep === r.buckets.length) return { result: r, hidden: 0, above: null }
  const result = { ...r, buckets: r.buckets.slice(0, keep), cells: r.cells.filter(([, b]) => b! < keep) }
  return { result, hidden: dropped / Math.max(1, r.timestamps.length), above: r.buckets[keep]! }
}

/**
 * The heat map with only the buckets of a zoom (exponents lo..hi, inclusive) as its rows, so a
 * narrow range gets the whole height; `hidden` is the mean rate of the buckets left out. Applied
 * after cropOutliers, so what the crop hides is not counted twice. A zoom reaching past the buckets
 * that have events keeps those it has (the API sends the rows from the lowest to the highest bucket
 * with events); one with none of them leaves no rows. No zoom: the heat map as it is.
 */
export function zoomBuckets<R extends Pick<HeatmapResult, 'buckets' | 'cells' | 'timestamps'>>(
  r: R,
  zoom: Band | null,
): { result: R; hidden: number } {
  if (!zoom) return { result: r, hidden: 0 }
  const buckets = r.buckets.filter((b) => b.index >= zoom.lo && b.index <= zoom.hi)
  if (buckets.length === r.buckets.length) return { result: r, hidden: 0 }
  const row = r.buckets.map((b) => buckets.indexOf(b)) // -1: left out
  let hidden = 0
  const cells: number[][] = []
  for (const [t, b, v] of r.cells) {
    if (t === undefined || b === undefined || v === undefined) continue
    const y = row[b] ?? -1
    if (y >= 0) cells.push([t, y, v])
    else hidden += v
  }
  const result = { ...r, buckets, cells }
  return { result, hidden: hidden / Math.max(1, r.timestamps.length) }
}

/** How a zoom reads ("1.05 ms – 8.39 ms"), from the buckets' labels or, for buckets not in them, their exponents. */
export function zoomLabel(buckets: Pick<Bucket, 'index' | 'lo' | 'hi' | 'label'>[], zoom: Band, unit: string): string {
  return bandLabel(buckets, zoom, unit) || `${formatAmount(2 ** zoom.lo, unit)} – ${formatAmount(2 ** (zoom.hi + 1), unit)}`
}

/** The heat map's cells as CSV, one row per column and bucket with events: time, unix, bucket bounds, rate. */
export function heatmapCsv(r: Pick<HeatmapResult, 'buckets' | 'cells' | 'timestamps' | 'dim'>, rateUnit: string): string {
  const rows = r.cells
    .filter(([t, b, v]) => t !== undefined && b !== undefined && v !== undefined && v > 0)
    .sort((x, y) => x[0]! - y[0]! || x[1]! - y[1]!)
    .map(([t, b, v]) => {
      const ts = r.timestamps[t!]!
      const bucket = r.buckets[b!]!
      return [new Date(ts * 1000).toISOString(), ts, bucket.label, bucket.lo, bucket.hi ?? null, v!]
    })
  return csvLines([['time', 'unix', r.dim, `${r.dim}_from`, `${r.dim}_to`, rateUnit], ...rows])
}

/**
 * A heat map moved on by its newest columns: `tail` (read each second from the base's last column
 * on, at the base's step) replaces the columns it covers and adds newer ones; as many of the
 * oldest drop off, so the range keeps its span. Buckets are the union of both. Anything that does
 * not line up with the base (another step, dimension, or a tail that starts past the base's end)
 * leaves the base as it is, until the next full read.
 */
export function mergeTail(base: HeatmapResult, tail: HeatmapResult | null | undefined): HeatmapResult {
  if (!tail || tail.step !== base.step || tail.dim !== base.dim || !tail.timestamps.length) return base
  if (tail.start < base.start || tail.start > base.end || tail.end < base.end) return base
  const step = base.step
  const span = base.end - base.start
  const end = tail.end
  const start = end - span
  const known = new Map<number, Bucket>()
  for (const b of [...base.buckets, ...tail.buckets]) known.set(b.index, b)
  const buckets = [...known.values()].sort((a, b) => a.index - b.index)
  const row = new Map(buckets.map((b, i) => [b.index, i]))
  const timestamps: number[] = []
  for (let t = start; t < end; t += step) timestamps.push(t)
  const col = (ts: number) => (ts - start) / step
  const cells: number[][] = []
  const total = new Array<number>(timestamps.length).fill(0)
  const add = (r: HeatmapResult, keep: (ts: number) => boolean) => {
    for (const [t, b, v] of r.cells) {
      const ts = r.timestamps[t!]
      if (ts === undefined || ts < start || !keep(ts)) continue
      cells.push([col(ts), row.get(r.buckets[b!]!.index)!, v!])
    }
    r.timestamps.forEach((ts, i) => {
      if (ts >= start && keep(ts)) total[col(ts)] = r.total[i] ?? 0
    })
  }
  add(base, (ts) => ts < tail.start)
  add(tail, () => true)
  let max = 0
  for (const c of cells) max = Math.max(max, c[2]!)
  return { ...base, start, end, timestamps, buckets, cells, total, max }
}

/** What a cell's tooltip says: its time, its bucket, its rate. */
export function cellTip(r: Pick<HeatmapResult, 'timestamps' | 'buckets' | 'dim'>, col: number, row: number, rate: number, rateUnit: string): [string, string, string] {
  const ts = r.timestamps[col]
  return [ts !== undefined ? formatDateTime(ts) : '', `${r.dim} ${r.buckets[row]?.label ?? ''}`, formatRate(rate, rateUnit)]
}

/**
 * The raster of a heat map: per cell (index col * rows + row), its rate (NaN: empty) and its
 * level, 0..1 along the colour scale as the colour key maps log10 of the rate. Typed arrays, so
 * that a 20k-cell map updated each second makes no garbage per cell.
 */
export interface Raster {
  cols: number
  rows: number
  rate: Float64Array
  level: Float32Array
}

export function rasterGrid(r: Pick<HeatmapResult, 'cells' | 'timestamps' | 'buckets'>, colors?: { min: number; max: number }): Raster {
  const cols = r.timestamps.length
  const rows = r.buckets.length
  const rate = new Float64Array(cols * rows).fill(NaN)
  for (const [t, b, v] of r.cells) {
    if (t === undefined || b === undefined || v === undefined || !(v > 0) || t >= cols || b >= rows) continue
    rate[t * rows + b] = v
  }
  const range = colors ?? cellsRange(r.cells)
  const span = range.max - range.min || 1
  const level = new Float32Array(cols * rows).fill(-1)
  for (let i = 0; i < rate.length; i++) {
    const v = rate[i]!
    if (v > 0) level[i] = Math.min(1, Math.max(0, (Math.log10(v) - range.min) / span))
  }
  return { cols, rows, rate, level }
}

/** [r, g, b] of a CSS colour written as #rgb, #rrggbb or rgb()/rgba(); null for anything else. */
export function parseColor(css: string): [number, number, number] | null {
  const s = css.trim()
  let m = /^#([0-9a-f]{3})$/i.exec(s)
  if (m) return [...m[1]!].map((h) => parseInt(h + h, 16)) as [number, number, number]
  m = /^#([0-9a-f]{6})$/i.exec(s)
  if (m) return [0, 2, 4].map((i) => parseInt(m![1]!.slice(i, i + 2), 16)) as [number, number, number]
  m = /^rgba?\(\s*(\d+)[\s,]+(\d+)[\s,]+(\d+)/i.exec(s)
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null
}

/** The colour at `t` (0..1) of a scale, linear between its evenly spaced stops (as ECharts' continuous colour key). */
export function scaleColor(stops: [number, number, number][], t: number): [number, number, number] {
  if (stops.length === 1) return stops[0]!
  const x = Math.min(1, Math.max(0, t)) * (stops.length - 1)
  const i = Math.min(stops.length - 2, Math.floor(x))
  const f = x - i
  const [a, b] = [stops[i]!, stops[i + 1]!]
  return [0, 1, 2].map((k) => Math.round(a[k]! + (b[k]! - a[k]!) * f)) as [number, number, number]
}

/** The cell under a point (px from the chart's top-left) of a chart `width` x `height`, or null off the plot. */
export function cellAtPoint(width: number, height: number, cols: number, rows: number, x: number, y: number): { col: number; row: number } | null {
  const w = width - HEAT_GRID.left - HEAT_GRID.right
  const h = height - HEAT_GRID.top - HEAT_GRID.bottom
  const fx = (x - HEAT_GRID.left) / w
  const fy = (y - HEAT_GRID.top) / h
  if (!(cols > 0 && rows > 0 && w > 0 && h > 0) || fx < 0 || fx >= 1 || fy < 0 || fy >= 1) return null
  return { col: Math.floor(fx * cols), row: rows - 1 - Math.floor(fy * rows) }
}

/** The plot's rectangle inside a chart `width` x `height`: [left, top, width, height], px. */
export function plotRect(width: number, height: number): [number, number, number, number] {
  return [HEAT_GRID.left, HEAT_GRID.top, width - HEAT_GRID.left - HEAT_GRID.right, height - HEAT_GRID.top - HEAT_GRID.bottom]
}

/**
 * The raster as an image of one pixel per cell (RGBA, `cols` wide, `rows` high, the lowest bucket
 * at the bottom), each cell coloured at its level along `stops` in `levels` steps; empty cells
 * transparent. Scaled up without smoothing it is the heat map: one image to paint, where a
 * rectangle per cell costs a paint of each.
 */
export function rasterPixels(g: Raster, stops: [number, number, number][], levels = 64): Uint8ClampedArray<ArrayBuffer> {
  const palette = Array.from({ length: levels }, (_, l) => scaleColor(stops, l / (levels - 1)))
  const px = new Uint8ClampedArray(g.cols * g.rows * 4)
  for (let col = 0; col < g.cols; col++) {
    for (let row = 0; row < g.rows; row++) {
      const level = g.level[col * g.rows + row]!
      if (level < 0) continue
      const [r, gr, b] = palette[Math.round(level * (levels - 1))]!
      const o = ((g.rows - 1 - row) * g.cols + col) * 4
      px[o] = r
      px[o + 1] = gr
      px[o + 2] = b
      px[o + 3] = 255
    }
  }
  return px
}
