// The client diagnosis page: its URL state and wording. Pure; tested in clients.test.ts.
import type { DiagnosisLink } from '../api/client'
import { formatLinkSpeed } from './format'
import { EMPTY_WORKSHEET, RANGES, makeStatistic, type RangeId, type WorksheetState } from '../state/url'

export const DIAG_RANGES: { id: RangeId; label: string }[] = RANGES.filter((r) => r.id !== '1w').map((r) => ({ id: r.id, label: r.label }))

export type ClientView = { client: string | null; range: RangeId; at: number | null }

export function decodeClientView(search: string): { view: ClientView; warnings: string[] } {
  const q = new URLSearchParams(search)
  const warnings: string[] = []
  const client = q.get('client')?.trim() || null
  if (!client) warnings.push('no client given (?client=ADDRESS)')
  let range: RangeId = '10m'
  const r = q.get('range')
  if (r !== null) {
    if (DIAG_RANGES.some((x) => x.id === r)) range = r as RangeId
    else warnings.push(`range '${r}' is not one of ${DIAG_RANGES.map((x) => x.id).join(', ')}`)
  }
  let at: number | null = null
  const a = q.get('at')
  if (a !== null) {
    if (/^\d{9,11}$/.test(a)) at = Number(a)
    else warnings.push(`'${a}' is not a unix time`)
  }
  return { view: { client, range, at }, warnings }
}

export function encodeClientView(v: ClientView): string {
  const q = new URLSearchParams()
  if (v.client) q.set('client', v.client)
  if (v.range !== '10m') q.set('range', v.range)
  if (v.at !== null) q.set('at', String(v.at))
  const s = q.toString()
  return s ? `?${s}` : ''
}

/** The API window: the last `range` (live) or the `range` before `at`. */
export function diagnosisWindow(v: ClientView): { start: string; end: string } {
  const seconds = RANGES.find((r) => r.id === v.range)?.seconds ?? 600
  return v.at === null ? { start: `-${v.range}`, end: '-2s' } : { start: String(v.at - seconds), end: String(v.at) }
}

export const VERDICT_LABEL: Record<string, string> = {
  'network-bound': 'network-bound',
  'client-bound': 'client-bound',
  'server-latency-bound': 'server-latency-bound',
  healthy: 'healthy',
  idle: 'idle',
}

export function verdictLevel(v: string): 'ok' | 'warn' | 'bad' | 'none' {
  return v === 'healthy' ? 'ok' : v === 'idle' ? 'none' : v === 'server-latency-bound' ? 'bad' : 'warn'
}

/** "1.2 ms", "350 µs", "–". */
export function latencyText(s: number | null | undefined): string {
  if (s === null || s === undefined) return '–'
  if (s >= 1) return `${s.toPrecision(3)} s`
  if (s >= 1e-3) return `${Number((s * 1e3).toPrecision(3))} ms`
  return `${Number((s * 1e6).toPrecision(3))} µs`
}

/** A share as the diagnosis words it: two significant digits, "38 %", "0.52 %". */
export function percentText(share: number): string {
  return `${Number((100 * share).toPrecision(2))} %`
}

const TOWARDS = { out: 'sent to it', in: 'received from it' } as const

/** The client's share of the server's link, its busier direction: "38 % of eth0's 10 Gbit/s (sent to it)", or why there is none. */
export function linkShareText(link: DiagnosisLink | null | undefined): string {
  if (!link) return 'no data'
  if (link.capacity_bytes_per_s === null || link.share === null) return `${link.interface}, speed unknown`
  return `${percentText(link.share)} of ${link.interface}'s ${formatLinkSpeed(link.capacity_bytes_per_s)} (${TOWARDS[link.share_direction]})`
}

/** How full the link is as a whole, its busier direction: "92 % out", "–" without speed or totals. */
export function linkBusyText(link: DiagnosisLink | null | undefined): string {
  if (!link || link.utilisation === null) return '–'
  return `${percentText(link.utilisation)} ${link.utilisation_direction}`
}

/** A reason's statistic opened in the worksheet, over the same window. */
export function evidenceWorksheet(
  stat: { metric: string; by?: string | null; where?: Record<string, string[]> },
  v: ClientView,
): WorksheetState {
  const heat = stat.by === 'latency' || stat.by === 'size' || stat.by === 'offset'
  const s = makeStatistic(stat.metric, stat.by ?? null, stat.where ?? {}, heat ? 'heatmap' : 'area')
  return { ...EMPTY_WORKSHEET, statistics: [s], range: v.range, paused: v.at !== null, at: v.at }
}
