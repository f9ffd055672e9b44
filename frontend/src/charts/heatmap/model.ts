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
   * The cells are drawn beneath the chart as a raster (rasterPixels, charts/heatmap/Raster.tsx),
   * not by ECharts, which builds an object per cell (some 200 ms for 20k cells, where the raster
   * takes under a millisecond): the option keeps the axes, the colour key, the band and the
   * annotations, on a time axis of column positions.
   */
  raster?: boolean
}
