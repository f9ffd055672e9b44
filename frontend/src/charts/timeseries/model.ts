import type { Annotation } from '../annotations/transform'
import type { Names } from '../../lib/names'
// A statistic over time, as the card keeps it: the query's history plus live seconds.

export interface TimeseriesData {
  /** Seconds per point. */
  step: number
  /** Unix second of each point. */
  timestamps: number[]
  /** Whole statistic at each point. */
  total: number[]
  /** Breakdown elements, largest over the range first; empty without a breakdown. */
  keys: string[]
  /** values[i][t]: rate of keys[i] at timestamps[t]. */
  values: number[][]
  /** Everything outside keys (null without a breakdown); keys + other = total. */
  other: number[] | null
  /** The breakdown dimension (null without one), and the names of its keys when they are clients. */
  by?: string | null
  names?: Names
}

/** One second pushed by WS /api/v1/live (not part of the OpenAPI document). */
export interface LiveMessage {
  id: string
  ts: number
  total: number
  values: Record<string, number>
  other: number | null
}

export const OTHER_KEY = '\u0000other'
export const TOTAL_KEY = '\u0000total'

export interface LegendRow {
  key: string
  /** What the row shows: the element, or a client's name. */
  label: string
  /** The element as the API names it (a client's address), for data-key and filters' sake. */
  element: string
  /** Hover text: a named client's name with its address; else the label. */
  hover: string
  color: string
  /** Rate at the newest point. */
  last: number
  /** Mean rate over the shown range. */
  mean: number
  /** Fraction of the total over the range, 0..1. */
  share: number
  /** A real element that can be added as a filter (not "other"). */
  drillable: boolean
}

export interface TimeseriesOptions {
  display: 'area' | 'line'
  unit: string
  /** Spans of time to mark (benchmark runs), in unix seconds. */
  annotations?: Annotation[]
  /** One element drawn bright and the rest faded (Fishworks' highlight), or none. */
  highlight?: string | null
  /** The lowest and highest second inside each coarse point (of the query's timestamps). */
  minmax?: MinMax | null
}

export interface MinMax {
  timestamps: number[]
  min: number[]
  max: number[]
}

export type LegendSort = 'mean' | 'last' | 'name'
export const LEGEND_SORTS: readonly LegendSort[] = ['mean', 'last', 'name']

/** How the legend is shown: its order, what it is searched for, the element highlighted. */
export interface LegendView {
  sort: LegendSort
  desc: boolean
  search: string
  highlight: string | null
}

/** By mean over the range, largest first; no search, nothing highlighted. */
export const DEFAULT_LEGEND: LegendView = { sort: 'mean', desc: true, search: '', highlight: null }

