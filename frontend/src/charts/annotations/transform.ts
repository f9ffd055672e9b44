// Spans of time drawn on charts: benchmark runs, alerts while open, agents connecting and
// disconnecting; clipped to what a chart shows. Pure; tested beside.
import type { EventPublic, RunPublic } from '../../api/client'
import { eventTitle } from '../../lib/alerts'
import type { Names } from '../../lib/names'

export type AnnotationKind = 'run' | 'alert' | 'agent'
import { CHART } from '../palette'

export interface Annotation {
  label: string
  /** Unix seconds, [from, to). */
  from: number
  to: number
  /** A run when absent. */
  kind?: AnnotationKind
}

export const ANNOTATION_KEY = '\u0000runs'

// Each kind its own hue, so an alert never reads as a run; the theme's colours (styles.css).
const STYLE: Record<AnnotationKind, { fill: string; border: string; text: string }> = {
  run: { fill: CHART.markFill, border: CHART.markLine, text: CHART.markText },
  alert: { fill: CHART.alertFill, border: CHART.alertLine, text: CHART.alertText },
  agent: { fill: CHART.agentFill, border: CHART.agentLine, text: CHART.markText },
}

/** How an annotation of a kind is drawn: its colours (CSS custom properties) and whether its words show. */
export function annotationLook(kind: AnnotationKind = 'run'): { fill: string; border: string; text: string; label: boolean } {
  // an agent's second is a hairline: its words would cover the chart (the aria label keeps them)
  return { ...STYLE[kind], label: kind !== 'agent' }
}

/** The fields of a series that only marks spans (id, no data, the areas): stacks, legends and
 * other markAreas stay the chart's own. `spans` are [label, from, to, kind] in the x axis' units. */
export function annotationSeries(spans: [string, number, number, AnnotationKind?][]) {
  return {
    id: ANNOTATION_KEY,
    data: [] as never[],
    silent: true,
    markArea: {
      silent: true,
      itemStyle: { color: STYLE.run.fill, borderColor: STYLE.run.border, borderWidth: 1 },
      label: { show: true, position: 'insideTopLeft' as const, color: STYLE.run.text, fontSize: 11 },
      // runs take the series' style; other kinds bring their own
      data: spans.map(([name, from, to, kind = 'run']) => {
        const st = annotationLook(kind)
        const own = kind === 'run' ? {} : { itemStyle: { color: st.fill, borderColor: st.border }, label: { color: st.text, show: st.label } }
        return [{ name, xAxis: from, ...own }, { xAxis: to }] as [{ name: string; xAxis: number; itemStyle?: object; label?: object }, { xAxis: number }]
      }),
    },
  }
}

/** Alerts from when they fired until they cleared (or now while open), a client element by its
 * name; agent events as one second. */
export function eventAnnotations(events: EventPublic[] | undefined, nowS: number, names?: Names): Annotation[] {
  const out: Annotation[] = []
  for (const e of events ?? []) {
    if (e.kind === 'alert.fired') {
      const title = eventTitle(e, names)
      out.push({ label: e.until == null ? `alert: ${title} (open)` : `alert: ${title}`, from: e.at, to: e.until ?? nowS, kind: 'alert' })
    } else if (e.kind === 'agent.connected' || e.kind === 'agent.disconnected') {
      out.push({ label: `${e.label} ${e.kind === 'agent.connected' ? 'connected' : 'disconnected'}`, from: e.at, to: e.at + 1, kind: 'agent' })
    }
  }
  return out
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
export function categorySpans(list: Annotation[], timestamps: number[], step: number): { label: string; lo: number; hi: number; kind?: AnnotationKind }[] {
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
    if (lo >= 0) out.push({ label: a.label, lo: lo - 0.5, hi: hi + 0.5, ...(a.kind ? { kind: a.kind } : {}) })
  }
  return out
}

/** What screen readers (and tests) hear of a chart's annotations. */
export function annotationsText(list: Annotation[]): string {
  const named: [AnnotationKind, string][] = [['run', 'runs marked'], ['alert', 'alerts marked'], ['agent', 'agent events']]
  return named
    .map(([kind, title]) => [title, list.filter((a) => (a.kind ?? 'run') === kind).map((a) => a.label)] as const)
    .filter(([, labels]) => labels.length)
    .map(([title, labels]) => `; ${title}: ${labels.join(', ')}`)
    .join('')
}
