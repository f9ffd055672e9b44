// Server state through TanStack Query: one hook per API read.
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useMemo } from 'react'
import { eventAnnotations, runAnnotations, type Annotation } from '../charts/annotations/transform'
import { withSource, type Action } from '../lib/sources'
import type { Statistic, WorksheetState } from '../state/url'
import { apiRange, LIVE_END, rangeSeconds } from '../state/url'
import { csrfHeaders } from '../auth/session'
import { ApiError, api, unwrap, type HeatmapResult, type Schemas, type SourceList } from './client'

/** where {client: [a, b]} -> ["client=a,b"], the API's repeatable filter parameter. */
export function whereParams(where: Record<string, string[]> | undefined): string[] {
  return Object.entries(where ?? {}).map(([dim, values]) => `${dim}=${values.join(',')}`)
}

type View = Pick<WorksheetState, 'range' | 'paused' | 'at'>

/** How often a live chart re-reads its history (live seconds arrive in between). */
export function refreshMs(view: View): number | false {
  if (view.paused) return false
  const s = rangeSeconds(view.range)
  return s <= 600 ? 30_000 : s <= 3600 ? 60_000 : 300_000
}

/** Points asked of /query: one per second up to 10 minutes, then about 600. */
export function pointsFor(view: View): number {
  return Math.min(rangeSeconds(view.range), 600)
}

function viewKey(view: View) {
  return [view.range, view.paused ? view.at : 'live']
}

export function useMetrics() {
  return useQuery({
    queryKey: ['metrics'],
    queryFn: async () => unwrap(await api.GET('/api/v1/metrics')),
    staleTime: Infinity,
  })
}

/** The source list with the server's clock at the answer, so staleness is judged on the server's time. */
export type SourcesAnswer = SourceList & { serverOffsetMs: number }

/** Server clock minus browser clock, from the answer's Date header (0 without one). */
function clockOffset(response: Response): number {
  const date = Date.parse(response.headers.get('date') ?? '')
  return Number.isFinite(date) ? date - Date.now() : 0
}

/** Every observer shares one cache entry; the Sources page asks for a 2 s poll, the header 10 s. */
export function useSources(refetchMs = 10_000) {
  return useQuery({
    queryKey: ['sources'],
    queryFn: async (): Promise<SourcesAnswer> => {
      const r = await api.GET('/api/v1/sources')
      return { ...unwrap(r), serverOffsetMs: clockOffset(r.response) }
    },
    refetchInterval: refetchMs,
  })
}

/** Suspend or resume a source; the answer (the source with its request) goes into the list at once. */
export function useSourceControl() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: async ({ agent, name, action }: { agent: string; name: string; action: Action }) =>
      unwrap(await api.POST(action === 'suspend' ? '/api/v1/sources/suspend' : '/api/v1/sources/resume', { body: { agent, name } })),
    onSuccess: (updated) => {
      client.setQueryData<SourcesAnswer>(['sources'], (old) => (old ? { ...withSource(old, updated), serverOffsetMs: old.serverOffsetMs } : old))
      void client.invalidateQueries({ queryKey: ['sources'] })
    },
  })
}

export function useStatus() {
  return useQuery({
    queryKey: ['status'],
    queryFn: async () => unwrap(await api.GET('/api/v1/status')),
    refetchInterval: 2_000,
    placeholderData: keepPreviousData,
  })
}

async function getQuery(stat: Statistic, range: { start: string; end: string; points?: number; step?: number; minmax?: boolean }) {
  const query = { metric: stat.metric, by: stat.by ?? undefined, where: whereParams(stat.where), top: stat.top, ...range }
  return unwrap(await api.GET('/api/v1/query', { params: { query } }))
}

/** Seconds [from, to) of a statistic, one point each (to fill what live pushes missed). */
export function fetchSeconds(stat: Statistic, from: number, to: number) {
  return getQuery({ ...stat, top: 100 }, { start: String(from), end: String(to), step: 1 })
}

/** `minmax`: also each point's lowest and highest second, when points are coarser than a second. */
export function useStatisticQuery(stat: Statistic, view: View, minmax = false) {
  return useQuery({
    queryKey: ['query', stat.metric, stat.by, stat.where, stat.top, ...viewKey(view), minmax],
    queryFn: () => getQuery(stat, { points: pointsFor(view), ...apiRange(view), ...(minmax ? { minmax } : {}) }),
    refetchInterval: refreshMs(view),
    placeholderData: keepPreviousData,
    retry: 1,
  })
}

/** Columns asked of /heatmap: one per second up to 5 minutes, then 300. */
function heatmapPoints(view: View): number {
  return Math.min(rangeSeconds(view.range), 300)
}

export function useHeatmap(stat: Statistic, view: View) {
  const dim = stat.by ?? 'latency'
  const s = rangeSeconds(view.range)
  return useQuery({
    queryKey: ['heatmap', stat.metric, dim, stat.where, ...viewKey(view)],
    queryFn: async () =>
      unwrap(
        await api.GET('/api/v1/heatmap', {
          params: {
            query: { metric: stat.metric, dim, where: whereParams(stat.where), points: heatmapPoints(view), ...apiRange(view) },
          },
        }),
      ),
    // No live push for histograms: re-read often while the range is short.
    refetchInterval: view.paused ? false : s <= 600 ? 2_000 : s <= 3600 ? 10_000 : 60_000,
    // a live map's read differs from the last anyway: comparing up to 20k cells with it is wasted
    structuralSharing: false,
    placeholderData: keepPreviousData,
    retry: 1,
  })
}

/**
 * A live heat map's newest columns, read each second from its last column on at its step
 * (a few hundred cells, not the whole range), for mergeTail to move the map on between full reads.
 */
export function useHeatmapTail(stat: Statistic, view: View, base: Pick<HeatmapResult, 'step' | 'timestamps'> | undefined) {
  const dim = stat.by ?? 'latency'
  const from = base?.timestamps[base.timestamps.length - 1]
  const live = !view.paused && from !== undefined
  return useQuery({
    queryKey: ['heatmap-tail', stat.metric, dim, stat.where, base?.step, from],
    queryFn: async () =>
      unwrap(
        await api.GET('/api/v1/heatmap', {
          params: { query: { metric: stat.metric, dim, where: whereParams(stat.where), step: base!.step, start: String(from), end: LIVE_END } },
        }),
      ),
    enabled: live,
    refetchInterval: live ? 1_000 : false,
    retry: false, // the next second asks again
  })
}

export interface MembersRequest {
  dim: string
  lo: number
  hi: number
  by: string
  /** Only these seconds [start, end) of the range (a span of the heat map's columns). */
  span?: { start: number; end: number } | null
}

/**
 * Who is in a band of a heat map: the statistic broken down by `req.by`, keeping only
 * events in buckets lo..hi (`where=latency=lo:hi`), over the heat map's own range and tier.
 *
 * This reads GET /api/v1/breakdown rather than GET /api/v1/members: /members averages
 * over a one-point window that falls on the minute tier, so it misses the minutes not yet
 * rolled up and disagrees with the heat map beside it (and is empty on a fresh server).
 */
export function useMembers(stat: Statistic, view: View, req: MembersRequest | null) {
  return useQuery({
    queryKey: ['members', stat.metric, stat.where, req, ...viewKey(view)],
    enabled: req !== null,
    queryFn: async () =>
      unwrap(
        await api.GET('/api/v1/breakdown', {
          params: {
            query: {
              metric: stat.metric,
              by: req!.by,
              where: whereParams({ ...stat.where, [req!.dim]: [`${req!.lo}:${req!.hi}`] }),
              top: 20,
              points: heatmapPoints(view),
              ...(req!.span ? { start: String(req!.span.start), end: String(req!.span.end) } : apiRange(view)),
            },
          },
        }),
      ),
    refetchInterval: view.paused || req?.span ? false : 5_000,
    placeholderData: keepPreviousData,
    retry: 1,
  })
}

/**
 * The directory tree of a statistic's path breakdown (file or share) over the worksheet's
 * range; rooted where the statistic's prefix filter (`file^`) points. `shape`: levels and
 * children per directory to read.
 */
export function useHierarchy(stat: Statistic, view: View, shape: { depth: number; top: number } | null) {
  return useQuery({
    queryKey: ['hierarchy', stat.metric, stat.by, stat.where, shape, ...viewKey(view)],
    enabled: shape !== null && !!stat.by,
    queryFn: async () =>
      unwrap(
        await api.GET('/api/v1/hierarchy', {
          params: { query: { metric: stat.metric, by: stat.by!, where: whereParams(stat.where), ...shape!, ...apiRange(view) } },
        }),
      ),
    refetchInterval: refreshMs(view),
    placeholderData: keepPreviousData,
    retry: 1,
  })
}

export function useWorksheets(enabled: boolean) {
  return useQuery({
    queryKey: ['worksheets'],
    enabled,
    queryFn: async () => unwrap(await api.GET('/api/v1/worksheets')),
  })
}

// ------------------------------------------------------------------ benchmark runs
export function useRuns() {
  return useQuery({
    queryKey: ['runs'],
    queryFn: async () => unwrap(await api.GET('/api/v1/runs')).runs,
    refetchInterval: 5_000,
  })
}

/** The report of an ended run (a running one has none yet). */
export function useRunReport(id: string | null, tolerance: number, ended: boolean) {
  return useQuery({
    queryKey: ['run-report', id, tolerance],
    queryFn: async () => unwrap(await api.GET('/api/v1/runs/{run_id}/report', { params: { path: { run_id: id! }, query: { tolerance } } })),
    enabled: id !== null && ended,
    placeholderData: keepPreviousData,
  })
}

function useRunMutation<A, R>(fn: (a: A) => Promise<R>) {
  const client = useQueryClient()
  return useMutation({
    mutationFn: fn,
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: ['runs'] })
      void client.invalidateQueries({ queryKey: ['run-report'] })
    },
  })
}

export function useStartRun() {
  return useRunMutation(async (name: string) => unwrap(await api.POST('/api/v1/runs', { body: { name } })))
}

export function useStopRun() {
  return useRunMutation(async (id: string) => unwrap(await api.POST('/api/v1/runs/{run_id}/stop', { params: { path: { run_id: id } }, body: {} })))
}

export function useDeleteRun() {
  return useRunMutation(async (id: string) => {
    const r = await api.DELETE('/api/v1/runs/{run_id}', { params: { path: { run_id: id } } })
    if (!r.response.ok) unwrap(r)
  })
}

/** Import pasted results: JSON through the typed client, CSV as text/csv. */
export function useImportResults() {
  return useRunMutation(async ({ id, request }: { id: string; request: { csv: string } | { body: Schemas['RunResultsImport'] } }) => {
    if ('csv' in request) {
      const r = await fetch(`/api/v1/runs/${encodeURIComponent(id)}/results.csv`, {
        method: 'POST',
        headers: { 'content-type': 'text/csv', ...csrfHeaders() },
        body: request.csv,
      })
      const body = await r.json().catch(() => ({}))
      if (!r.ok) throw new ApiError(typeof body.detail === 'string' ? body.detail : `${r.status} ${r.statusText}`, r.status)
      return body
    }
    return unwrap(await api.POST('/api/v1/runs/{run_id}/results', { params: { path: { run_id: id } }, body: request.body }))
  })
}

/** What charts of this range mark: benchmark runs, alerts while open, agents coming and going.
 * Every card of a worksheet asks with the same key, so it is read once. */
export function useAnnotations(view: View): Annotation[] {
  const runs = useRuns()
  const range = apiRange(view)
  const events = useQuery({
    queryKey: ['events', 'annotations', range],
    queryFn: async () =>
      unwrap(
        await api.GET('/api/v1/events', {
          params: { query: { ...range, open_before: true, kind: ['alert.fired', 'agent.connected', 'agent.disconnected'] } },
        }),
      ),
    refetchInterval: view.paused ? false : 5_000,
  })
  return useMemo(() => {
    const now = Date.now() / 1000
    return [...runAnnotations(runs.data, now), ...eventAnnotations(events.data?.events, now, events.data?.names)]
  }, [runs.data, events.data])
}

/** The latency heat map of NFS operations over a run's window, of one client or all. */
export function useRunHeatmap(run: { start: number; end: number | null } | null, client: string | null) {
  return useQuery({
    queryKey: ['run-heatmap', run?.start, run?.end, client],
    queryFn: async () =>
      unwrap(
        await api.GET('/api/v1/heatmap', {
          params: {
            query: {
              metric: 'nfs.ops', dim: 'latency', where: client ? [`client=${client}`] : [], points: 120,
              start: String(Math.floor(run!.start)), end: String(Math.ceil(run!.end!)),
            },
          },
        }),
      ),
    enabled: run !== null && run.end !== null,
  })
}

/** Why this client is slow, over a window; re-read every 10 s while live. */
export function useDiagnosis(client: string | null, window: { start: string; end: string }, live: boolean) {
  return useQuery({
    queryKey: ['diagnosis', client, window.start, window.end],
    queryFn: async () =>
      unwrap(await api.GET('/api/v1/clients/{client}/diagnosis', { params: { path: { client: client! }, query: window } })),
    enabled: client !== null,
    refetchInterval: live ? 10_000 : false,
    placeholderData: keepPreviousData,
  })
}
