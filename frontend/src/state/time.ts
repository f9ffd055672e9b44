// The worksheet's time: a span (`range`, e.g. 10m, 3h, 2d) that ends now while live, or at
// `at` while paused. The toolbar's moves are pure functions of that state, tested alone.
import type { WorksheetState } from './url'

type TimeView = Pick<WorksheetState, 'range' | 'paused' | 'at'>

const UNIT: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 }
export const MIN_SPAN = 60
export const MAX_SPAN = 366 * 86400

/** Seconds of a span like '90s', '10m', '3h', '2d', '1w'; null when it is not one (or out of bounds). */
export function parseSpan(text: string): number | null {
  const m = /^(\d{1,7})([smhdw])$/.exec(text)
  if (!m) return null
  const s = Number(m[1]) * UNIT[m[2]!]!
  return s >= MIN_SPAN && s <= MAX_SPAN ? s : null
}

/** The span's shortest exact name: 3600 -> '1h', 1209600 -> '2w', 2592000 -> '30d', 5430 -> '5430s'. */
export function formatSpan(seconds: number): string {
  for (const u of ['w', 'd', 'h', 'm'] as const) {
    if (seconds % UNIT[u]! === 0) return `${seconds / UNIT[u]!}${u}`
  }
  return `${seconds}s`
}

const WORDS: Array<[number, string]> = [[604800, 'week'], [86400, 'day'], [3600, 'hour'], [60, 'minute'], [1, 'second']]

/** In words: '10 minutes', '1 hour', '30 days', '90 minutes'. */
export function spanLabel(seconds: number): string {
  for (const [size, word] of WORDS) {
    if (seconds % size === 0 && (size < 604800 || seconds / size < 52)) {
      const n = seconds / size
      return `${n} ${word}${n === 1 ? '' : 's'}`
    }
  }
  return `${seconds} seconds`
}

/** Fishworks' unit buttons: a month is 30 days. */
export const UNITS = [
  { id: 'minute', label: 'Minute', seconds: 60, key: 'n' },
  { id: 'hour', label: 'Hour', seconds: 3600, key: 'h' },
  { id: 'day', label: 'Day', seconds: 86400, key: 'd' },
  { id: 'week', label: 'Week', seconds: 604800, key: 'w' },
  { id: 'month', label: 'Month', seconds: 30 * 86400, key: 'm' },
] as const

const clamp = (s: number) => Math.min(MAX_SPAN, Math.max(MIN_SPAN, s))

/** The end of the shown range: `at` while paused, else the newest complete second. */
export function shownEnd(v: TimeView, nowS: number): number {
  return v.paused && v.at !== null ? v.at : nowS - 2
}

/** One unit (click), or one more of it when the span is already whole units of it (shift-click). */
export function showUnits(v: TimeView, unitSeconds: number, more: boolean): TimeView {
  const span = parseSpan(v.range) ?? 600
  const n = more && span % unitSeconds === 0 ? span / unitSeconds + 1 : 1
  return { ...v, range: formatSpan(clamp(n * unitSeconds)) }
}

/** Back one span: paused, ending where the shown range starts. */
export function back(v: TimeView, nowS: number): TimeView {
  const span = parseSpan(v.range) ?? 600
  return { ...v, paused: true, at: shownEnd(v, nowS) - span }
}

/** Forward one span; ending within a tenth of a span of now (back, then forward) goes live again. */
export function forward(v: TimeView, nowS: number): TimeView {
  if (!v.paused || v.at === null) return v
  const span = parseSpan(v.range) ?? 600
  const at = v.at + span
  return at >= nowS - 2 - span / 10 ? toNow(v) : { ...v, at }
}

export function toNow(v: TimeView): TimeView {
  return { ...v, paused: false, at: null }
}

/** Zoom in (factor 0.5) or out (2) about the range's end; live stays live. */
export function zoom(v: TimeView, factor: number): TimeView {
  const span = parseSpan(v.range) ?? 600
  return { ...v, range: formatSpan(clamp(Math.round((span * factor) / 60) * 60)) }
}

/** A chart's own time showing [start, end) paused at its end, or null when it is shorter than a minute or longer than a year. */
export function spanView(start: number, end: number): TimeView | null {
  const span = end - start
  return span >= MIN_SPAN && span <= MAX_SPAN ? { range: formatSpan(span), paused: true, at: end } : null
}

/** An absolute range [start, end) in unix seconds: paused at its end. Null, with why, when it cannot be shown. */
export function absolute(v: TimeView, start: number, end: number, nowS: number): TimeView | string {
  if (!(end > start)) return 'the end must be after the start'
  if (start >= nowS) return 'the range starts in the future'
  const span = end - start
  if (span < MIN_SPAN) return 'the range must be at least a minute'
  if (span > MAX_SPAN) return 'the range must be at most a year'
  return end >= nowS - 2 ? { ...v, range: formatSpan(span), paused: false, at: null } : { ...v, range: formatSpan(span), paused: true, at: end }
}
