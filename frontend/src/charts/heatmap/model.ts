import type { HeatmapResult } from '../../api/client'
import type { Annotation } from '../annotations/transform'
// A histogram dimension over time (GET /api/v1/heatmap), and a band of its buckets.

/** A band of buckets by log2 exponent, inclusive: lo <= e <= hi. */
export interface Band {
  lo: number
  hi: number
}

/** A span of a heat map's columns, unix seconds [start, end): a drag across columns selects it. */
export interface Span {
  start: number
  end: number
}

/** Mean rate of one bucket over the range (the side panel). */
export interface BucketRate {
  index: number
  label: string
  rate: number
  share: number
}

export interface HeatmapOptions {
  /** Unit of the bucketed value: "ns" or "bytes". */
  valueUnit: string
  /** Unit of the rate, e.g. "ops/s". */
  rateUnit: string
  selection: Band | null
  /** The selected band covers only these columns (null or absent: all of them). */
  span?: Span | null
  /** Spans of time to mark (benchmark runs), in unix seconds. */
  annotations?: Annotation[]
  /** log10 bounds of the colour scale, when heat maps side by side must share it. */
  colors?: { min: number; max: number }
  /**
   * The cells are drawn beneath the chart as a raster (paintColumns, charts/heatmap/Raster.tsx),
   * not by ECharts, which builds an object per cell (some 200 ms for 20k cells, where the raster
   * takes under a millisecond), and with them the time axis's labels, the annotations and the
   * selected band (`selection` and `span` are then left out of the option): the option keeps the
   * bucket axis and the colour key, on a time axis of column positions, and stays the same when a
   * new column moves the cells (and a band over a span) along or a band is selected.
   */
  raster?: boolean
}

/** What a heat map's chart is drawn over: its columns and rows, without its cells. */
export type HeatShape = Pick<HeatmapResult, 'dim' | 'step' | 'start' | 'end' | 'timestamps' | 'buckets'>

/**
 * A heat map's cells as one grid of typed arrays, column by column: cell (col, row) is at
 * col * rows + row, its rate 0 where empty. A live map's newest columns are merged into it in
 * place each second (mergeTailInto), so that a 20k-cell map updated at 1 Hz makes no array per
 * cell and its raster repaints only the columns written since it last painted.
 */
export interface HeatGrid extends HeatShape {
  cols: number
  rows: number
  rate: Float64Array
  /** The row of each bucket exponent. */
  rowOf: Map<number, number>
  /** Bumped by each change of the cells. */
  version: number
  /** Per column, the version that last wrote it. */
  written: Uint32Array
  /** The version of the last change that moved every cell (a new column at the end, new rows). */
  moved: number
}
