// Pure transforms: sparse heat-map cells -> ECharts heatmap option, bucket rates, bands.
import type { Bucket, HeatmapResult } from '../../api/client'
import type { ChartOption, HeatmapSeries, LineSeries } from '../../components/EChart'
import { annotationSeries, categorySpans, clipAnnotations } from '../annotations/transform'
import { csvLines } from '../../lib/csv'
import { formatAmount, formatDateTime, formatRate, formatTick } from '../../lib/format'
import { CHART, HEAT_COLORS } from '../palette'
import type { Band, BucketRate, HeatGrid, HeatmapOptions, HeatShape, Span } from './model'

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

/**
 * The rectangle a selected band is drawn as over a raster's plot `[left, top, width, height]`
 * (plotRect), px: over the rows of `r`'s buckets it covers and, with a span, the columns the span
 * covers (all of them without one), edge to edge of their cells, the lowest bucket at the bottom.
 * Null when it covers no drawn row or no column (a span scrolled off the map). The span is in
 * time, so that a new column at the end moves the rectangle left without the chart being drawn again.
 */
export function bandRect(
  r: Pick<HeatmapResult, 'timestamps' | 'step' | 'buckets'>,
  band: Band,
  span: Span | null | undefined,
  plot: [number, number, number, number],
): [number, number, number, number] | null {
  const rows = bandRows(r, band)
  const cols: [number, number] | null = span ? spanColumns(r, span) : [0, r.timestamps.length - 1]
  const [n, m] = [r.timestamps.length, r.buckets.length]
  if (!rows || !cols || !n || !m) return null
  const [left, top, w, h] = plot
  const [x0, x1] = [left + (cols[0] / n) * w, left + ((cols[1] + 1) / n) * w]
  const [y0, y1] = [top + h - ((rows[1] + 1) / m) * h, top + h - (rows[0] / m) * h]
  return [x0, y0, x1 - x0, y1 - y0]
}

/**
 * The span from the column starting at second a to the one starting at second b, in either order,
 * whole columns of `step` seconds: a drag's, by the columns' times (a live map moves on under it).
 */
export function spanBetween(a: number, b: number, step: number): Span {
  return { start: Math.min(a, b), end: Math.max(a, b) + step }
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

/**
 * The chart of a heat map: its axes, colour key, band and annotations, and its cells. With a
 * raster beneath (opts.raster), that raster draws the cells, the time axis's labels, the
 * annotations and the selected band (Raster.tsx): the chart is then the same after a new column
 * moved every cell (and a band over a span of time) along, and after a band was selected, so
 * ECharts is left alone.
 */
export function toHeatmapOption(r: HeatShape & { cells?: number[][] }, opts: HeatmapOptions): ChartOption {
  const data = opts.raster ? [] : cellData(r.cells ?? [])
  const { min, max } = opts.colors ?? cellsRange(r.cells ?? [])
  const yLabels = r.buckets.map((b) => bucketAxisLabel(b, opts.valueUnit))
  const cols = opts.span ? spanColumns(r, opts.span) : null
  // a band over a span that covers none of the columns is not drawn (not over all of them either)
  const rows = opts.selection && !opts.raster && (!opts.span || cols) ? bandRows(r, opts.selection) : null
  // With a raster beneath, no series draws cells (nor the band): an empty line series stands in
  // for them, and the time axis is a value axis of column positions (a category axis of ~800
  // columns costs ECharts some 100 ms a redraw), without labels.
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
  const marks = last === undefined || opts.raster ? [] : categorySpans(clipAnnotations(opts.annotations ?? [], r.start, last + r.step), r.timestamps, r.step)
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
    // a raster's cells have their own tooltip (Raster.tsx)
    tooltip: opts.raster
      ? { confine: true }
      : {
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
          axisLabel: { show: false },
          axisTick: { show: false },
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

/** Mean rate of each of `buckets` (a grid's first rows, rowSums their sums over `cols` columns), highest bucket first (as drawn, top to bottom). */
export function bucketRates(buckets: Pick<Bucket, 'index' | 'label'>[], sums: ArrayLike<number>, cols: number): BucketRate[] {
  const n = Math.max(1, cols)
  let all = 0
  for (let i = 0; i < buckets.length; i++) all += sums[i]!
  return buckets.map((b, i) => ({ index: b.index, label: b.label, rate: sums[i]! / n, share: all ? sums[i]! / all : 0 })).reverse()
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
 * events over the range are dropped, so the bulk gets the height. `keep` is how many rows (from
 * the lowest) stay, `hidden` what the others held, as a mean rate over `cols` columns, and
 * `above` the first bucket hidden (null when nothing is). `sums`: rowSums.
 */
export function cropRows(buckets: Bucket[], sums: ArrayLike<number>, cols: number, pct: number): { keep: number; hidden: number; above: Bucket | null } {
  const rows = buckets.length
  if (!(pct > 0) || rows < 2) return { keep: rows, hidden: 0, above: null }
  let all = 0
  for (let i = 0; i < rows; i++) all += sums[i]!
  let keep = rows
  let dropped = 0
  // drop from the top while what is dropped stays within pct of all events; keep at least one bucket
  while (keep > 1 && dropped + sums[keep - 1]! <= (all * pct) / 100) dropped += sums[--keep]!
  if (keep === rows) return { keep, hidden: 0, above: null }
  return { keep, hidden: dropped / Math.max(1, cols), above: buckets[keep]! }
}

/**
 * The rows [lo, hi) of the first `keep` (what a crop kept) that a zoom of the bucket axis shows
 * (exponents zoom.lo..zoom.hi, inclusive: a run of rows, as the buckets are in order), so a
 * narrow range gets the whole height; `hidden` is the mean rate of the kept rows left out.
 * Applied after cropRows, so what the crop hides is not counted twice. A zoom reaching past the
 * buckets that have events keeps those it has (the API sends the rows from the lowest to the
 * highest bucket with events); one with none of them leaves no rows. No zoom: every kept row.
 */
export function zoomRows(buckets: Pick<Bucket, 'index'>[], keep: number, sums: ArrayLike<number>, cols: number, zoom: Band | null): { lo: number; hi: number; hidden: number } {
  if (!zoom) return { lo: 0, hi: keep, hidden: 0 }
  let lo = 0
  while (lo < keep && buckets[lo]!.index < zoom.lo) lo++
  let hi = lo
  while (hi < keep && buckets[hi]!.index <= zoom.hi) hi++
  let hidden = 0
  for (let i = 0; i < keep; i++) if (i < lo || i >= hi) hidden += sums[i]!
  return { lo, hi, hidden: hidden / Math.max(1, cols) }
}

/** How a zoom reads ("1.05 ms – 8.39 ms"), from the buckets' labels or, for buckets not in them, their exponents. */
export function zoomLabel(buckets: Pick<Bucket, 'index' | 'lo' | 'hi' | 'label'>[], zoom: Band, unit: string): string {
  return bandLabel(buckets, zoom, unit) || `${formatAmount(2 ** zoom.lo, unit)} – ${formatAmount(2 ** (zoom.hi + 1), unit)}`
}

/** The heat map's cells as CSV, one row per column and bucket with events: time, unix, bucket bounds, rate. */
export function heatmapCsv(g: Pick<HeatGrid, 'dim' | 'timestamps' | 'buckets' | 'cols' | 'rows' | 'rate'>, rateUnit: string): string {
  const lines: (string | number | null)[][] = [['time', 'unix', g.dim, `${g.dim}_from`, `${g.dim}_to`, rateUnit]]
  for (let col = 0; col < g.cols; col++) {
    const ts = g.timestamps[col]!
    for (let row = 0; row < g.rows; row++) {
      const v = g.rate[col * g.rows + row]!
      const b = g.buckets[row]!
      if (v > 0) lines.push([new Date(ts * 1000).toISOString(), ts, b.label, b.lo, b.hi ?? null, v])
    }
  }
  return csvLines(lines)
}

/** An empty grid of `cols` columns from `start` at `step`, a row per bucket (in order). */
function emptyGrid(dim: string, step: number, start: number, end: number, cols: number, buckets: Bucket[]): HeatGrid {
  const rows = buckets.length
  return {
    dim, step, start, end, buckets, cols, rows,
    timestamps: Array.from({ length: cols }, (_, i) => start + i * step),
    rate: new Float64Array(cols * rows),
    rowOf: new Map(buckets.map((b, i) => [b.index, i])),
    version: 0,
    written: new Uint32Array(cols),
    moved: 0,
  }
}

/** Write a result's cells into the grid, on its columns and rows (cells outside it are left out). */
function writeCells(g: HeatGrid, r: Pick<HeatmapResult, 'timestamps' | 'buckets' | 'cells'>): void {
  const rows = r.buckets.map((b) => g.rowOf.get(b.index)) // the grid's row of each of the result's buckets
  for (const [t, b, v] of r.cells) {
    const ts = r.timestamps[t!]
    const row = rows[b!]
    if (ts === undefined || row === undefined || !(v! > 0)) continue
    const col = (ts - g.start) / g.step
    if (col >= 0 && col < g.cols && Number.isInteger(col)) g.rate[col * g.rows + row] = v!
  }
}

/** A heat map's grid (its buckets in order), from a full read. */
export function gridOf(r: Pick<HeatmapResult, 'dim' | 'step' | 'start' | 'end' | 'timestamps' | 'buckets' | 'cells'>): HeatGrid {
  const g = emptyGrid(r.dim, r.step, r.timestamps[0] ?? r.start, r.end, r.timestamps.length, [...r.buckets].sort((a, b) => a.index - b.index))
  writeCells(g, r)
  return g
}

/** The grid on the rows of `buckets` (the union of its own and newer ones): each row's cells move to their bucket's new row. */
function relayout(g: HeatGrid, buckets: Bucket[]): void {
  const next = emptyGrid(g.dim, g.step, g.start, g.end, g.cols, buckets)
  const to = g.buckets.map((b) => next.rowOf.get(b.index)!)
  for (let col = 0; col < g.cols; col++) for (let row = 0; row < g.rows; row++) next.rate[col * next.rows + to[row]!] = g.rate[col * g.rows + row]!
  Object.assign(g, { buckets, rows: next.rows, rate: next.rate, rowOf: next.rowOf, moved: g.version })
}

/** Move the grid `k` columns on: the oldest drop off, as many empty ones start at the end. */
function shiftColumns(g: HeatGrid, k: number): void {
  if (k <= 0) return
  if (k >= g.cols) g.rate.fill(0)
  else {
    g.rate.copyWithin(0, k * g.rows)
    g.rate.fill(0, (g.cols - k) * g.rows)
  }
  g.start += k * g.step
  g.end += k * g.step
  g.timestamps = Array.from({ length: g.cols }, (_, i) => g.start + i * g.step)
  g.moved = g.version
}

/**
 * Moves a live heat map on by its newest columns, in place: `tail` (read each second from the
 * full read's last column on, at its step) replaces the columns it covers and adds newer ones;
 * as many of the oldest drop off, so the range keeps its span. New buckets add rows. Anything
 * that does not line up with the grid (another step or dimension, a tail off its columns, one
 * that starts past its end or ends before it: a late answer) leaves it as it is, until the next
 * full read. Merging the same tail again changes no cell. Returns whether the grid changed.
 */
export function mergeTailInto(g: HeatGrid, tail: HeatmapResult | null | undefined): boolean {
  if (!tail || tail.step !== g.step || tail.dim !== g.dim || !tail.timestamps.length) return false
  if (tail.start < g.start || tail.start > g.end || tail.end < g.end || (tail.start - g.start) % g.step || (tail.end - g.end) % g.step) return false
  g.version++
  const fresh = tail.buckets.filter((b) => !g.rowOf.has(b.index))
  if (fresh.length) relayout(g, [...g.buckets, ...fresh].sort((a, b) => a.index - b.index))
  shiftColumns(g, (tail.end - g.end) / g.step)
  // the tail covers every column from its start on: those lose what they had
  const from = Math.max(0, (tail.start - g.start) / g.step)
  g.rate.fill(0, from * g.rows)
  g.written.fill(g.version, from)
  writeCells(g, tail)
  return true
}

/** Per row, the sum of its rates over every column. */
export function rowSums(g: Pick<HeatGrid, 'cols' | 'rows' | 'rate'>): Float64Array {
  const sums = new Float64Array(g.rows)
  for (let col = 0; col < g.cols; col++) for (let row = 0; row < g.rows; row++) sums[row]! += g.rate[col * g.rows + row]!
  return sums
}

/** log10 bounds of the colour scale over rows [lo, hi) of a grid (as cellsRange over their cells). */
export function gridRange(g: Pick<HeatGrid, 'cols' | 'rows' | 'rate'>, lo: number, hi: number): { min: number; max: number } {
  let min = Infinity
  let max = 0
  for (let col = 0; col < g.cols; col++) {
    for (let i = col * g.rows + lo, end = col * g.rows + hi; i < end; i++) {
      const v = g.rate[i]!
      if (v > 0 && v < min) min = v
      if (v > max) max = v
    }
  }
  if (!(max > 0)) return { min: 0, max: 1 }
  const [a, b] = [Math.log10(min), Math.log10(max)]
  return { min: b - a < 0.5 ? b - 1 : a, max: b }
}

/** The sum of a column's rates over rows [lo, hi). */
export function columnSum(g: Pick<HeatGrid, 'cols' | 'rows' | 'rate'>, col: number, lo: number, hi: number): number {
  let sum = 0
  if (col >= 0 && col < g.cols) for (let i = col * g.rows + lo; i < col * g.rows + hi; i++) sum += g.rate[i]!
  return sum
}

/** The columns [c0, c1) written after version `since` (written: HeatGrid.written); [0, 0] when none is. */
export function dirtyColumns(written: Uint32Array, since: number): [number, number] {
  let c0 = 0
  while (c0 < written.length && written[c0]! <= since) c0++
  if (c0 === written.length) return [0, 0]
  let c1 = written.length
  while (written[c1 - 1]! <= since) c1--
  return [c0, c1]
}

/** What a cell's tooltip says: its time, its bucket, its rate. */
export function cellTip(r: Pick<HeatmapResult, 'timestamps' | 'buckets' | 'dim'>, col: number, row: number, rate: number, rateUnit: string): [string, string, string] {
  const ts = r.timestamps[col]
  return [ts !== undefined ? formatDateTime(ts) : '', `${r.dim} ${r.buckets[row]?.label ?? ''}`, formatRate(rate, rateUnit)]
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

/**
 * The cell under a point (px from the chart's top-left) of a chart `width` x `height`, or null off
 * the plot; with `clamp`, off the plot the nearest cell (where a drag begun on the plot ended).
 */
export function cellAtPoint(width: number, height: number, cols: number, rows: number, x: number, y: number, clamp = false): { col: number; row: number } | null {
  const w = width - HEAT_GRID.left - HEAT_GRID.right
  const h = height - HEAT_GRID.top - HEAT_GRID.bottom
  if (!(cols > 0 && rows > 0 && w > 0 && h > 0)) return null
  const on = (f: number) => (clamp ? Math.min(Math.max(f, 0), 1 - Number.EPSILON) : f)
  const [fx, fy] = [on((x - HEAT_GRID.left) / w), on((y - HEAT_GRID.top) / h)]
  if (!(fx >= 0 && fx < 1 && fy >= 0 && fy < 1)) return null
  return { col: Math.floor(fx * cols), row: rows - 1 - Math.floor(fy * rows) }
}

/** The plot's rectangle inside a chart `width` x `height`: [left, top, width, height], px. */
export function plotRect(width: number, height: number): [number, number, number, number] {
  return [HEAT_GRID.left, HEAT_GRID.top, width - HEAT_GRID.left - HEAT_GRID.right, height - HEAT_GRID.top - HEAT_GRID.bottom]
}

/** Steps between a time axis's labels, seconds: whole seconds, minutes, hours, days, a week. */
const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800]

/** Seconds east of UTC at unix second `ts`, in the browser's time zone. */
const localOffset = (ts: number) => -new Date(ts * 1000).getTimezoneOffset() * 60

/**
 * The labels of a heat map's time axis, which its raster draws (so that a new column moves them
 * without ECharts drawing its chart again): at most `most`, a whole step of local time apart (the
 * hour, midnight, ...; no closer than a column), each where its second falls along the `cols`
 * columns from `start`, as a share of the plot's width. `offset`: seconds east of UTC at a second.
 */
export function timeTicks(start: number, step: number, cols: number, most: number, offset = localOffset): { x: number; label: string }[] {
  const span = cols * step
  if (!(most >= 1) || !(span > 0)) return []
  const every = TIME_STEPS.find((s) => s >= step && span / s <= most) ?? Math.max(step, Math.ceil(span / most / 86400) * 86400)
  const out: { x: number; label: string }[] = []
  // in local time, the first whole step at or after the start; each moved back to UTC at its own offset (a change of summer time)
  const o = offset(start)
  for (let local = Math.ceil((start + o) / every) * every; local - o < start + span; local += every) {
    const t = local - offset(local - o)
    if (t >= start && t < start + span) out.push({ x: (t - start) / span, label: formatTick(t, span) })
  }
  return out
}

/** RGB of `levels` colours evenly along a scale's stops: the colours a raster paints with. */
export function paletteOf(stops: [number, number, number][], levels = 64): Uint8Array {
  const out = new Uint8Array(levels * 3)
  for (let l = 0; l < levels; l++) out.set(scaleColor(stops, l / Math.max(1, levels - 1)), l * 3)
  return out
}

/**
 * The raster of rows [lo, hi) of a grid as an image of one pixel per cell (RGBA, `g.cols` wide,
 * hi - lo high, the lowest bucket at the bottom), columns [c0, c1) of it painted into `px`: each
 * cell at its level along the colour key (log10 of its rate over `range`, as the chart's
 * visualMap maps it) in the palette's colours; empty cells transparent. Scaled up without
 * smoothing it is the heat map: one image to paint, where a rectangle per cell costs a paint of
 * each; a live map repaints only the columns a second wrote.
 */
export function paintColumns(
  g: Pick<HeatGrid, 'cols' | 'rows' | 'rate'>,
  lo: number,
  hi: number,
  range: { min: number; max: number },
  palette: Uint8Array,
  px: Uint8ClampedArray,
  c0 = 0,
  c1 = g.cols,
): void {
  const top = Math.max(1, palette.length / 3) - 1
  const span = range.max - range.min || 1
  const h = hi - lo
  for (let col = c0; col < c1; col++) {
    for (let row = lo; row < hi; row++) {
      const v = g.rate[col * g.rows + row]!
      const o = ((h - 1 - (row - lo)) * g.cols + col) * 4
      if (!(v > 0)) {
        px[o] = px[o + 1] = px[o + 2] = px[o + 3] = 0
        continue
      }
      const k = Math.round(Math.min(1, Math.max(0, (Math.log10(v) - range.min) / span)) * top) * 3
      px[o] = palette[k]!
      px[o + 1] = palette[k + 1]!
      px[o + 2] = palette[k + 2]!
      px[o + 3] = 255
    }
  }
}
