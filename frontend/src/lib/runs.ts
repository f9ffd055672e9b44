// Benchmark runs: the page's URL state and the report's wording. Pure; tested in runs.test.ts.
import type { RunPublic, RunReport, RunReportClient } from '../api/client'
import { formatBytes } from './format'
import { EMPTY_WORKSHEET, RANGES, makeStatistic, type WorksheetState } from '../state/url'

export const DEFAULT_TOLERANCE = 2

/** One run shown (`run`), or two compared (`compare`, with `client` filtering their heat maps). */
export type RunsView = { run: string | null; tolerance: number; compare?: [string, string] | null; client?: string | null }

const RUN_ID = /^[0-9a-f]{1,64}$/

/** ?run=ID&tol=2, or ?cmp=A,B&client=IP -> the view, with a warning for each part that cannot be read. */
export function decodeRunsView(search: string): { view: RunsView; warnings: string[] } {
  const q = new URLSearchParams(search)
  const warnings: string[] = []
  let run = q.get('run')
  let tolerance = DEFAULT_TOLERANCE
  const tol = q.get('tol')
  if (tol !== null) {
    const v = Number(tol)
    if (Number.isFinite(v) && v > 0 && v <= 100) tolerance = v
    else warnings.push(`tolerance '${tol}' is not a percentage in (0, 100]; using ${DEFAULT_TOLERANCE} %`)
  }
  if (run !== null && !RUN_ID.test(run)) {
    warnings.push(`'${run}' is not a run id`)
    run = null
  }
  let compare: [string, string] | null = null
  const cmp = q.get('cmp')
  if (cmp !== null) {
    const ids = cmp.split(',')
    if (ids.length === 2 && ids.every((x) => RUN_ID.test(x)) && ids[0] !== ids[1]) compare = [ids[0]!, ids[1]!]
    else warnings.push(`'${cmp}' is not two different run ids to compare`)
  }
  const client = q.get('client')
  return { view: { run: compare ? null : run, tolerance, compare, client: compare && client ? client : null }, warnings }
}

export function encodeRunsView(v: RunsView): string {
  const q = new URLSearchParams()
  if (v.compare) q.set('cmp', v.compare.join(','))
  else if (v.run) q.set('run', v.run)
  if (v.tolerance !== DEFAULT_TOLERANCE) q.set('tol', String(v.tolerance))
  if (v.compare && v.client) q.set('client', v.client)
  const s = q.toString()
  return s ? `?${s}` : ''
}

export interface CompareRow {
  client: string
  /** Wire bytes/s and ops/s in run A and B; null when the client was not on the wire in that run. */
  bytesA: number | null
  bytesB: number | null
  bytesDeltaPct: number | null
  opsA: number | null
  opsB: number | null
  opsDeltaPct: number | null
  /** The client's own verdict in each run, when it reported results there. */
  passedA: boolean | null
  passedB: boolean | null
}

function delta(a: number | null, b: number | null): number | null {
  return a === null || b === null || a === 0 ? null : (100 * (b - a)) / a
}

/** Per client, what crossed the wire in run A and in run B, and B's change against A; busiest first. */
export function compareRows(a: RunReport, b: RunReport): CompareRow[] {
  const oa = new Map(a.observed.map((o) => [o.client, o]))
  const ob = new Map(b.observed.map((o) => [o.client, o]))
  const pa = new Map(a.clients.map((c) => [c.client, c.passed]))
  const pb = new Map(b.clients.map((c) => [c.client, c.passed]))
  const clients = new Set([...oa.keys(), ...ob.keys(), ...pa.keys(), ...pb.keys()])
  const rows = [...clients].map((client) => {
    const x = oa.get(client)
    const y = ob.get(client)
    const bytesA = x?.bytes_per_s ?? null
    const bytesB = y?.bytes_per_s ?? null
    const opsA = x?.ops_per_s ?? null
    const opsB = y?.ops_per_s ?? null
    return {
      client, bytesA, bytesB, bytesDeltaPct: delta(bytesA, bytesB), opsA, opsB, opsDeltaPct: delta(opsA, opsB),
      passedA: pa.get(client) ?? null, passedB: pb.get(client) ?? null,
    }
  })
  return rows.sort((p, q) => Math.max(q.bytesA ?? 0, q.bytesB ?? 0) - Math.max(p.bytesA ?? 0, p.bytesB ?? 0) || p.client.localeCompare(q.client))
}

/** "+12.5 %", "−3.0 %", "–". */
export function deltaText(pct: number | null): string {
  if (pct === null) return '–'
  return `${pct >= 0 ? '+' : '−'}${Math.abs(pct).toFixed(1)} %`
}

/** "12 s", "4 min 05 s", "1 h 02 min"; a running run counts up to `now`. */
export function durationText(start: number, end: number | null, now: number): string {
  const s = Math.max(0, Math.round((end ?? now) - start))
  if (s < 60) return `${s} s`
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`
}

/** "99.4 %" of reported; "–" when nothing was reported. */
export function agreementText(pct: number | null | undefined): string {
  return pct === null || pct === undefined ? '–' : `${pct.toFixed(1)} %`
}

/** ok within the tolerance, bad outside it, none when there is nothing to compare. */
export function agreementLevel(pct: number | null | undefined, tolerance: number): 'ok' | 'bad' | 'none' {
  if (pct === null || pct === undefined) return 'none'
  return Math.abs(pct - 100) <= tolerance + 1e-9 ? 'ok' : 'bad'
}

export function runState(r: Pick<RunPublic, 'running' | 'exit_code'>): string {
  if (r.running) return 'running'
  if (r.exit_code === null || r.exit_code === undefined) return 'ended'
  return r.exit_code === 0 ? 'ended, exit 0' : `ended, exit ${r.exit_code}`
}

/** One line per client for the summary: "10.0.0.7: 1.2 GiB of 1.2 GiB (99.8 %)". */
export function clientLine(c: RunReportClient): string {
  return `${c.client}: ${formatBytes(c.wire.bytes ?? 0)} on the wire of ${formatBytes(c.reported.bytes ?? 0)} reported (${agreementText(c.bytes_agreement_pct)})`
}

export type ResultsFormat = 'fio' | 'simple' | 'csv'

/** Pasted client results -> the request to send, or an error naming the problem. */
export function resultsRequest(
  text: string,
  format: ResultsFormat,
  client: string,
): { csv: string } | { body: { format: 'fio' | 'simple'; report?: Record<string, unknown>; clients?: Record<string, unknown>[]; client?: string } } | { error: string } {
  const t = text.trim()
  if (!t) return { error: 'paste the clients\' results first' }
  if (format === 'csv') return { csv: t + '\n' }
  let doc: unknown
  try {
    doc = JSON.parse(format === 'fio' && t.includes('{') ? t.slice(t.indexOf('{')) : t)
  } catch (e) {
    return { error: `not JSON: ${(e as Error).message}` }
  }
  if (format === 'fio') {
    if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return { error: 'a fio report is a JSON object (fio --output-format=json)' }
    return { body: { format: 'fio', report: doc as Record<string, unknown>, ...(client.trim() ? { client: client.trim() } : {}) } }
  }
  if (!Array.isArray(doc)) return { error: 'expected a JSON list of per-client results: [{"client": ..., "write_bytes": ...}]' }
  return { body: { format: 'simple', clients: doc as Record<string, unknown>[] } }
}

/** The worksheet that shows a run: NFS bytes/s by client, paused at the run's end, over the
 * shortest range that holds the run (the worksheet's ranges are presets). */
export function worksheetForRun(start: number, end: number): WorksheetState {
  const need = end - start
  const range = RANGES.find((r) => r.seconds >= need)?.id ?? '1w'
  return { ...EMPTY_WORKSHEET, statistics: [makeStatistic('nfs.bytes', 'client')], range, paused: true, at: Math.ceil(end) }
}
