// Benchmark runs drawn on charts: spans of time, clipped to what a chart shows. Pure; tested beside.
import type { RunPublic } from '../../api/client'
import { CHART } from '../palette'

export interface Annotation {
  label: string
  /** Unix seconds, [from, to). */
  from: number
  to: number
}

export const ANNOTATION_KEY = '\u0000runs'

/** The fields of a series that only marks spans (id, no data, the areas): stacks, legends and
 * other markAreas stay the chart's own. `spans` are [label, from, to] in the x axis' units. */
export function annotationSeries(spans: [string, number, number][]) {
  return {
    id: ANNOTATION_KEY,
    data: [] as never[],
    silent: true,
    markArea: {
      silent: true,
      itemStyle: { color: CHART.markFill, borderColor: CHART.markLine, borderWidth: 1 },
      label: { show: true, position: 'insideTopLeft' as const, color: CHART.markText, fontSize: 11 },
      data: spans.map(([name, from, to]) => [{ name, xAxis: from }, { xAxis: to }] as [{ name: string; xAxis: number }, { xAxis: number }]),
    },
  }
}

/** Each run as a span; one still running reaches `nowS`. */
export function runAnnotations(runs: RunPublic[] | undefined, nowS: number): Annotation[] {
  return (runs ?? []).map((r) => ({ label: r.running ? `${r.name} (running)` : r.name, from: r.start, to: r.end ?? nowS }))
}

/** The annotations that overlap [first, last], clipped to it, oldest first. */
export function clipAnnotations(list: Annotation[], first: number, last: number): Annotation[] {
  return list
    .filter((a) => a.to > first && a.from <= last)
    .map((a) => ({ ...a, from: Math.max(a.from, first), to: Math.min(a.to, last) }))
    .sort((a, b) => a.from - b.from)
}

/** For a category axis of `timestamps` (points of `step` seconds): each annotation's first and
 * last point, as positions edge to edge (lo - 0.5 .. hi + 0.5). */
export function categorySpans(list: Annotation[], timestamps: number[], step: number): { label: string; lo: number; hi: number }[] {
  const out = []
  for (const a of list) {
    let lo = -1
    let hi = -1
    timestamps.forEach((t, i) => {
      if (t + step > a.from && t < a.to) {
        if (lo < 0) lo = i
        hi = i
      }
    })
    if (lo >= 0) out.push({ label: a.label, lo: lo - 0.5, hi: hi + 0.5 })
  }
  return out
}

/** What screen readers (and tests) hear of a chart's annotations. */
export function annotationsText(list: Annotation[]): string {
  return list.length ? `; runs marked: ${list.map((a) => a.label).join(', ')}` : ''
}
