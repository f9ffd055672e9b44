// The whole worksheet lives in the URL so that a link shows the same charts.
//
//   ?range=10m&paused=1&at=1763797185&ws=3f2a&name=Morning
//    &s=nfs.ops;by:client;top:10
//    &s=nfs.ops;by:file;w:client=10.0.0.7
//    &s=nfs.ops;by:latency;d:heatmap;w:client=10.0.0.7;w:op=read,write;crop:1
//    &s=nfs.ops;by:client;sort:name;q:10.0.0;hl:10.0.0.7
//
// One `s` per statistic: the metric, then `;`-separated fields `by:`, `top:`,
// `d:` (display), `h:` (its hierarchy shown: treemap or sunburst) and `w:dim=v1,v2`
// (filters; `w:file^=/dir` is a path prefix); then how its chart is shown:
// the legend's `sort:` (mean, last or name; a leading "-" for largest or Z
// first), `q:` (its search) and `hl:` (the highlighted element), a heat
// map's `crop:` (0.1, 1 or 5 %) and `yz:LO:HI` (its bucket axis zoomed to the
// buckets of exponents LO..HI), `mm:1` (min/max shown) and `t:` (a chart
// unsynced from the worksheet's time: its own span, live, or `t:1h@1763797185`
// paused at that end). Every name and value is percent-encoded on its own, so
// file names with `;`, `,` or `=` survive.
// Decoding never throws: what cannot be read falls back to a default and is
// reported in `warnings`.
import type { WorksheetStatistic } from '../api/client'
import type { Band } from '../charts/heatmap/model'
import { CROPS, type Crop } from '../charts/heatmap/transform'
import { DEFAULT_LEGEND, LEGEND_SORTS, type LegendSort, type LegendView } from '../charts/timeseries/model'
import { parseSpan } from './time'

export const RANGES = [
  { id: '1m', label: '1 min', seconds: 60 },
  { id: '10m', label: '10 min', seconds: 600 },
  { id: '1h', label: '1 hour', seconds: 3600 },
  { id: '1d', label: '1 day', seconds: 86400 },
  { id: '1w', label: '1 week', seconds: 604800 },
] as const

/** A span: a preset id or any other like '90m', '3h', '30d' (state/time.ts). */
export type RangeId = string
export type Display = 'area' | 'line' | 'heatmap'
export const DISPLAYS: readonly Display[] = ['area', 'line', 'heatmap']
export const DEFAULT_RANGE: RangeId = '10m'
export const DEFAULT_TOP = 10
export const MAX_STATISTICS = 50

export type HierarchyMode = 'treemap' | 'sunburst'
export const HIERARCHY_MODES: readonly HierarchyMode[] = ['treemap', 'sunburst']

/** A span that ends now while live, or at `at` while paused (the worksheet's, or an unsynced chart's own). */
export type TimeView = { range: RangeId; paused: boolean; at: number | null }

/**
 * A statistic and how its chart shows it, all kept in the link (so that it shows what its sender
 * saw) and in a saved worksheet (as `view`, in the link's syntax); absent means the default.
 * `zoom`: a heat map's bucket axis shows only these buckets.
 * `hierarchy`: the card also shows its breakdown's directory tree (path dimensions only).
 * `minmax`: dashed lines for each point's busiest and quietest second.
 * `time`: the chart is unsynced from the worksheet's time axis and shows this range instead.
 */
export type Statistic = Omit<WorksheetStatistic, 'view'> & {
  display: Display
  legend?: LegendView
  crop?: Crop
  zoom?: Band
  hierarchy?: HierarchyMode
  minmax?: boolean
  time?: TimeView
}

export interface WorksheetState extends TimeView {
  statistics: Statistic[]
  /** Paused worksheets stop live updates; `at` is the end of the frozen range (unix seconds). */
  /** The saved worksheet this view came from, if any. */
  id: string | null
  name: string | null
  /** Opened from a share link: shown without its editing controls until someone edits a copy. */
  readOnly: boolean
}

export const EMPTY_WORKSHEET: WorksheetState = {
  statistics: [],
  range: DEFAULT_RANGE,
  paused: false,
  at: null,
  id: null,
  name: null,
  readOnly: false,
}

export function rangeSeconds(range: RangeId): number {
  return parseSpan(range) ?? 600
}

export function isRangeId(v: string): v is RangeId {
  return parseSpan(v) !== null
}

/**
 * Where a live chart's history ends: the newest seconds are still being stored
 * (the agent sends each second just after it closes), so history stops 2 s back
 * and the live push fills in the rest instead of a dip to zero.
 */
export const LIVE_END = '-2s'

/** The end of the range a worksheet paused at `nowMs` keeps (the newest complete second). */
export function pauseTime(nowMs: number): number {
  return Math.floor(nowMs / 1000) - 2
}

/** The API range of a worksheet: start=-10m&end=-2s while live, or fixed unix seconds when paused. */
export function apiRange(ws: TimeView): { start: string; end: string } {
  if (ws.paused && ws.at !== null) {
    return { start: String(ws.at - rangeSeconds(ws.range)), end: String(ws.at) }
  }
  return { start: `-${ws.range}`, end: LIVE_END }
}

const enc = encodeURIComponent

/** A query value decoded, or null when it is not valid percent-encoding. */
export function safeDecode(s: string): string | null {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '))
  } catch {
    return null
  }
}

/** A query string's `key=raw` pairs in order, values still encoded; empty pairs skipped. */
export function queryPairs(search: string): Array<[string, string]> {
  const query = search.startsWith('?') ? search.slice(1) : search
  const out: Array<[string, string]> = []
  for (const pair of query.split('&')) {
    if (!pair) continue
    const eq = pair.indexOf('=')
    out.push(eq < 0 ? [pair, ''] : [pair.slice(0, eq), pair.slice(eq + 1)])
  }
  return out
}

export function makeStatistic(
  metric: string,
  by: string | null = null,
  where: Record<string, string[]> = {},
  display: Display = 'area',
  top = DEFAULT_TOP,
): Statistic {
  return { metric, by, where, display, top }
}

/** The fields that say what is charted (and so which chart it is). */
function queryFields(s: Statistic): string[] {
  const parts = [enc(s.metric)]
  if (s.by) parts.push(`by:${enc(s.by)}`)
  if (s.top !== DEFAULT_TOP) parts.push(`top:${s.top}`)
  if (s.display !== 'area') parts.push(`d:${s.display}`)
  for (const [dim, values] of Object.entries(s.where ?? {})) {
    parts.push(`w:${enc(dim)}=${values.map(enc).join(',')}`)
  }
  return parts
}

/** The fields that say how its chart shows it, each left out when it is the default. */
function viewFields(s: Statistic): string[] {
  const parts: string[] = []
  if (s.hierarchy) parts.push(`h:${s.hierarchy}`)
  const l = s.legend
  if (l && (l.sort !== DEFAULT_LEGEND.sort || l.desc !== DEFAULT_LEGEND.desc)) parts.push(`sort:${l.desc ? '-' : ''}${l.sort}`)
  if (l?.search) parts.push(`q:${enc(l.search)}`)
  if (l?.highlight != null) parts.push(`hl:${enc(l.highlight)}`)
  if (s.crop) parts.push(`crop:${s.crop}`)
  if (s.zoom) parts.push(`yz:${s.zoom.lo}:${s.zoom.hi}`)
  if (s.minmax) parts.push('mm:1')
  if (s.time) parts.push(`t:${s.time.range}${s.time.paused && s.time.at !== null ? `@${s.time.at}` : ''}`)
  return parts
}

/** How a chart shows its statistic, in the link's syntax: a saved worksheet keeps it as `view`. */
export function chartView(s: Statistic): string {
  return viewFields(s).join(';')
}

/** An unsynced chart's own time from `t:` (`10m`, or `1h@1763797185` paused at that end), or null. */
export function parseOwnTime(value: string): TimeView | null {
  const m = /^([^@]+)(?:@(\d+))?$/.exec(value)
  if (!m || !isRangeId(m[1]!)) return null
  const at = m[2] !== undefined ? Number(m[2]) : null
  if (at !== null && !(Number.isSafeInteger(at) && at > 0)) return null
  return { range: m[1]!, paused: at !== null, at }
}

export function encodeStatistic(s: Statistic): string {
  return [...queryFields(s), ...viewFields(s)].join(';')
}

export function decodeStatistic(text: string): { stat: Statistic | null; warnings: string[] } {
  const warnings: string[] = []
  const [head = '', ...fields] = text.split(';')
  const metric = safeDecode(head)?.trim()
  if (!metric) return { stat: null, warnings: [`statistic "${text}" has no metric; it was left out`] }
  const stat = makeStatistic(metric)
  const where: Record<string, string[]> = {}
  const legend: LegendView = { ...DEFAULT_LEGEND }
  for (const field of fields) {
    const colon = field.indexOf(':')
    const name = colon < 0 ? field : field.slice(0, colon)
    const value = colon < 0 ? '' : field.slice(colon + 1)
    if (name === 'by') {
      stat.by = safeDecode(value) || null
    } else if (name === 'top') {
      const n = Number(value)
      if (Number.isInteger(n) && n >= 1 && n <= 100) stat.top = n
      else warnings.push(`top "${value}" of ${metric} is not a whole number 1..100; using ${DEFAULT_TOP}`)
    } else if (name === 'd') {
      if ((DISPLAYS as readonly string[]).includes(value)) stat.display = value as Display
      else warnings.push(`display "${value}" of ${metric} is unknown; using area`)
    } else if (name === 'h') {
      if ((HIERARCHY_MODES as readonly string[]).includes(value)) stat.hierarchy = value as HierarchyMode
      else warnings.push(`hierarchy "${value}" of ${metric} is unknown; it is not shown`)
    } else if (name === 'w') {
      const eq = value.indexOf('=')
      const dim = eq > 0 ? safeDecode(value.slice(0, eq)) : null
      const vals = eq > 0 ? value.slice(eq + 1).split(',').map(safeDecode) : []
      if (!dim || vals.some((v) => v === null)) {
        warnings.push(`filter "${value}" of ${metric} cannot be read; it was left out`)
        continue
      }
      where[dim] = [...(where[dim] ?? []), ...(vals as string[])]
    } else if (name === 'sort') {
      const by = value.replace(/^-/, '')
      if ((LEGEND_SORTS as readonly string[]).includes(by)) Object.assign(legend, { sort: by as LegendSort, desc: value.startsWith('-') })
      else warnings.push(`legend order "${value}" of ${metric} is not one of ${LEGEND_SORTS.join(', ')} (with "-" for descending); using -mean`)
    } else if (name === 'q' || name === 'hl') {
      const text = safeDecode(value)
      if (text === null) warnings.push(`legend ${name === 'q' ? 'search' : 'highlight'} "${value}" of ${metric} cannot be read; it was left out`)
      else if (name === 'q') legend.search = text
      else legend.highlight = text
    } else if (name === 'mm') {
      if (value === '1') stat.minmax = true
      else if (value !== '0') warnings.push(`min/max "${value}" of ${metric} is not 1 or 0; not shown`)
    } else if (name === 't') {
      const time = parseOwnTime(value)
      if (time) stat.time = time
      else warnings.push(`chart time "${value}" of ${metric} is not a span like 10m or 1h@<unix seconds>; it follows the worksheet`)
    } else if (name === 'crop') {
      const pct = CROPS.find((c) => c > 0 && String(c) === value)
      if (pct) stat.crop = pct
      else warnings.push(`crop "${value}" of ${metric} is not one of ${CROPS.filter((c) => c > 0).join(', ')} (%); not cropping`)
    } else if (name === 'yz') {
      // bucket exponents (log2 of the value), either way round
      const [, a, b] = /^(\d{1,2}):(\d{1,2})$/.exec(value)?.map(Number) ?? []
      if (a !== undefined && b !== undefined && a <= 63 && b <= 63) stat.zoom = { lo: Math.min(a!, b!), hi: Math.max(a!, b!) }
      else warnings.push(`bucket zoom "${safeDecode(value) ?? value}" of ${metric} is not LO:HI, two bucket exponents 0 to 63; showing every bucket`)
    } else if (field !== '') {
      warnings.push(`field "${field}" of ${metric} is unknown; it was ignored`)
    }
  }
  stat.where = where
  if (legend.sort !== DEFAULT_LEGEND.sort || legend.desc !== DEFAULT_LEGEND.desc || legend.search || legend.highlight !== null) stat.legend = legend
  if (stat.display === 'heatmap' && !stat.by) {
    warnings.push(`heat map of ${metric} names no histogram dimension; showing latency`)
    stat.by = 'latency'
  }
  return { stat, warnings }
}

/** The query string (with its leading "?", or "" when empty) of a worksheet. */
export function encodeWorksheet(ws: WorksheetState): string {
  const params: string[] = []
  if (ws.id) params.push(`ws=${enc(ws.id)}`)
  if (ws.name) params.push(`name=${enc(ws.name)}`)
  if (ws.readOnly) params.push('ro=1')
  if (ws.range !== DEFAULT_RANGE) params.push(`range=${ws.range}`)
  if (ws.paused) {
    params.push('paused=1')
    if (ws.at !== null) params.push(`at=${ws.at}`)
  }
  for (const s of ws.statistics) params.push(`s=${encodeStatistic(s)}`)
  return params.length ? `?${params.join('&')}` : ''
}

export function decodeWorksheet(search: string): { state: WorksheetState; warnings: string[] } {
  const state: WorksheetState = { ...EMPTY_WORKSHEET, statistics: [] }
  const warnings: string[] = []
  for (const [key, raw] of queryPairs(search)) {
    switch (key) {
      case 's': {
        if (state.statistics.length >= MAX_STATISTICS) {
          warnings.push(`more than ${MAX_STATISTICS} statistics; the rest were left out`)
          break
        }
        // A link whose separators were escaped as a whole (%3B) is read after one decode.
        const text = raw.includes(';') || !/%3B/i.test(raw) ? raw : (safeDecode(raw) ?? raw)
        const { stat, warnings: w } = decodeStatistic(text)
        warnings.push(...w)
        if (stat) state.statistics.push(stat)
        break
      }
      case 'range':
        if (isRangeId(raw)) state.range = raw
        else warnings.push(`range "${safeDecode(raw) ?? raw}" is not a span of a minute to a year like 10m, 6h, 2d or 1w; showing ${DEFAULT_RANGE}`)
        break
      case 'paused':
        state.paused = raw === '1' || raw === 'true'
        break
      case 'at': {
        const n = Number(raw)
        if (Number.isInteger(n) && n > 0) state.at = n
        else warnings.push(`pause time "${safeDecode(raw) ?? raw}" is not unix seconds; pausing at now`)
        break
      }
      case 'ws':
        state.id = safeDecode(raw) || null
        break
      case 'name':
        state.name = safeDecode(raw) || null
        break
      case 'ro':
        state.readOnly = raw === '1' || raw === 'true'
        break
      default:
        break // other parameters belong to someone else; keep quiet
    }
  }
  if (!state.paused) state.at = null
  return { state, warnings }
}

/**
 * A stable identity for each statistic of a worksheet (same statistic twice gets #2): what it
 * charts, not how, so that sorting a legend or cropping a heat map keeps the chart as it is.
 */
export function statisticKeys(stats: Statistic[]): string[] {
  const seen = new Map<string, number>()
  return stats.map((s) => {
    const base = queryFields(s).join(';')
    const n = (seen.get(base) ?? 0) + 1
    seen.set(base, n)
    return n === 1 ? base : `${base}#${n}`
  })
}

/** The worksheet as the API stores it (POST/PUT /api/v1/worksheets). */
export function toWorksheetBody(ws: WorksheetState, name: string) {
  return {
    name,
    range: { start: `-${ws.range}`, end: 'now' },
    statistics: ws.statistics.map((s) => ({ metric: s.metric, by: s.by ?? null, where: s.where ?? {}, top: s.top, display: s.display, view: chartView(s) })),
  }
}

/** A saved worksheet from the API as view state; unknown ranges fall back to the default. */
export function fromSaved(saved: {
  id: string
  name: string
  range?: { start?: string; end?: string }
  statistics?: WorksheetStatistic[]
}): { state: WorksheetState; warnings: string[] } {
  const warnings: string[] = []
  const start = saved.range?.start ?? `-${DEFAULT_RANGE}`
  const rel = start.startsWith('-') ? start.slice(1) : ''
  let range: RangeId = DEFAULT_RANGE
  if (isRangeId(rel)) range = rel
  else warnings.push(`saved range "${start}" is not a span like -10m or -2d; showing ${DEFAULT_RANGE}`)
  const statistics = (saved.statistics ?? []).map((s) => {
    const display = (DISPLAYS as readonly string[]).includes(s.display) ? (s.display as Display) : 'area'
    const stat = makeStatistic(s.metric, s.by ?? null, s.where ?? {}, display, s.top ?? DEFAULT_TOP)
    if (!s.view) return stat
    // how the chart was shown: the link's fields, read with the link's decoder (and its warnings)
    const shown = decodeStatistic(`${enc(s.metric)};${s.view}`)
    warnings.push(...shown.warnings)
    const { metric: _m, by: _b, where: _w, top: _t, display: _d, ...view } = shown.stat ?? stat
    return { ...stat, ...view }
  })
  return { state: { ...EMPTY_WORKSHEET, statistics, range, id: saved.id, name: saved.name }, warnings }
}
