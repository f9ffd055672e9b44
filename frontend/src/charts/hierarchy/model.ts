// A path dimension over a range folded into a directory tree (GET /api/v1/hierarchy),
// drawn as a treemap or a sunburst; clicking a directory re-roots it with a prefix filter.
import type { HierarchyMode } from '../../state/url'

export type { HierarchyMode }

/** Dimensions whose values are paths: they have a hierarchy and take a prefix filter. */
export const PATH_DIMS: readonly string[] = ['file', 'share']

/** A filter named `file^` keeps a directory and everything below it (the API's `where=file^=/dir`). */
export const PREFIX = '^'

/** What the card asks of the API: levels below the root, and children listed per directory. */
export const SHAPE = { depth: 3, top: 10 }

export interface HierarchyOptions {
  mode: HierarchyMode
  /** Unit of the statistic's rate, e.g. "ops/s". */
  unit: string
}

/** One step of the breadcrumb: a directory from the top down to the root shown. */
export interface Crumb {
  label: string
  path: string
}

/** A prefix filter of a statistic, as a removable chip. */
export interface PrefixChip {
  /** The filter's name in `where`, e.g. "file^". */
  key: string
  label: string
}

/** A child of the root shown, as a row of the list beside the chart. */
export interface ChildRow {
  id: string
  name: string
  kind: string
  value: number
  share: number
  /** The directory a click re-roots at, or null (files' parent is the root; other, folded). */
  target: string | null
  title: string
}
