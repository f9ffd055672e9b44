// Drill-down: from an element of a statistic to a new statistic with that element as a filter.
import type { MetricPublic } from '../api/client'
import { makeStatistic, type Statistic } from '../state/url'

export interface DrillChoice {
  dim: string
  label: string
  /** A histogram dimension: the new chart is a heat map. */
  heatmap: boolean
}

export function isHistogram(metric: MetricPublic | undefined, dim: string | null | undefined): boolean {
  return !!dim && !!metric?.histograms.some((h) => h.name === dim)
}

/**
 * The dimensions left to break down by after filtering on one element of `elementDim`:
 * every dimension of the metric except that one, the current breakdown and those already filtered.
 */
export function drillChoices(metric: MetricPublic, stat: Statistic, elementDim: string | null): DrillChoice[] {
  const used = new Set<string>(Object.keys(stat.where ?? {}).filter((d) => !isHistogram(metric, d)))
  if (elementDim) used.add(elementDim)
  if (stat.by && !elementDim) used.add(stat.by)
  return metric.dimensions
    .filter((d) => !used.has(d))
    .map((d) => ({ dim: d, label: `by ${d}`, heatmap: isHistogram(metric, d) }))
}

/** The statistic that a drill-down opens: the element as a filter, broken down by `next`. */
export function drillStatistic(
  metric: MetricPublic,
  stat: Statistic,
  element: { dim: string; key: string } | null,
  next: string,
  extraWhere: Record<string, string[]> = {},
): Statistic {
  const where = { ...(stat.where ?? {}), ...extraWhere }
  if (element) where[element.dim] = [element.key]
  const heatmap = isHistogram(metric, next)
  return makeStatistic(stat.metric, next, where, heatmap ? 'heatmap' : stat.display === 'line' ? 'line' : 'area', stat.top)
}

/** The string (non-histogram) dimensions still free for a members list of a heat map. */
export function memberDims(metric: MetricPublic, stat: Statistic): string[] {
  const filtered = new Set(Object.keys(stat.where ?? {}))
  return metric.dimensions.filter((d) => !isHistogram(metric, d) && !filtered.has(d))
}
