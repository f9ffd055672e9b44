// A statistic card drawn over time: history from /query, then live seconds from the WebSocket.
import { useEffect, useMemo, useRef, useState } from 'react'
import type { MetricPublic } from '../api/client'
import { fetchSeconds, useAnnotations, useHierarchy, useStatisticQuery } from '../api/hooks'
import { SHAPE } from '../charts/hierarchy/model'
import { isPathDim, rootWhere, withoutFilter } from '../charts/hierarchy/transform'
import { HierarchyView, PrefixChips } from '../charts/hierarchy/View'
import { useLive } from '../api/live'
import type { LiveMessage } from '../charts/timeseries/model'
import { DEFAULT_LEGEND, OTHER_KEY, TOTAL_KEY } from '../charts/timeseries/model'
import { addLive, addMissing, fromQuery, isEmpty, liveFromQuery, liveKeepFrom, mergeLive, minMaxOf, missingSpan, toCsv } from '../charts/timeseries/transform'
import { TimeseriesView } from '../charts/timeseries/View'
import { EmptyState } from '../components/EmptyState'
import { can } from '../auth/roles'
import { useMe } from '../auth/session'
import { openAlertFor } from '../pages/AlertsPage'
import { formatClock } from '../lib/format'
import { rangeSeconds, type Statistic, type TimeView } from '../state/url'
import { ApproximateBadge, CardFrame, useCardInfo } from './CardFrame'
import { useChartTime } from './ChartTime'
import { ExportButtons } from './ExportButtons'
import { useDrill } from './useDrill'

export interface CardProps {
  stat: Statistic
  /** The worksheet's time; an unsynced chart shows its own (`stat.time`) instead. */
  view: TimeView
  metric: MetricPublic | undefined
  onOpen: (s: Statistic) => void
  onChange: (s: Statistic) => void
  /** Absent in a read-only (shared) view: its charts stay. */
  onRemove?: () => void
  /** The worksheet's charts share a crosshair (hovering one shows the time on all) unless unsynced. */
  group?: string
}

export function TimeseriesCard({ stat, view: worksheet, metric, onOpen, onChange, onRemove, group }: CardProps) {
  const time = useChartTime(stat, worksheet, onChange)
  const { view, synced } = time
  const me = useMe()
  const png = useRef<(() => string) | null>(null)
  const minmax = !!stat.minmax
  const q = useStatisticQuery(stat, view, minmax)
  const extremes = useMemo(() => (minmax && q.data ? minMaxOf(q.data) : null), [minmax, q.data])
  // min/max is offered once points are coarser than a second (a minute's mean hides its bursts)
  const coarse = (q.data?.step ?? 1) > 1
  const annotations = useAnnotations(view)
  const [live, setLive] = useState<LiveMessage[]>([])
  const [liveError, setLiveError] = useState<string | null>(null)
  const range = rangeSeconds(view.range)
  const base = useMemo(() => (q.data ? fromQuery(q.data) : null), [q.data])
  const keepFrom = useRef(0)
  keepFrom.current = base ? liveKeepFrom(base, range) : 0

  // A new history supersedes the live seconds it covers.
  useEffect(() => setLive((l) => l.filter((m) => m.ts >= keepFrom.current)), [base])
  useEffect(() => {
    if (view.paused) setLive([])
  }, [view.paused])

  const keys = useMemo(() => q.data?.series.map((s) => s.key) ?? [], [q.data])
  useLive(
    view.paused || !q.data ? null : { metric: stat.metric, by: stat.by ?? null, where: stat.where ?? {}, keys },
    (m) => {
      setLiveError(null)
      setLive((l) => addLive(l, m, keepFrom.current))
    },
    setLiveError,
  )

  // Once pushes arrive, read again the seconds they cannot cover (see missingSpan), once per history.
  const filledFor = useRef<unknown>(null)
  useEffect(() => {
    if (!base || view.paused || filledFor.current === base) return
    const span = missingSpan(base, live)
    if (!span && !live.length) return
    filledFor.current = base
    if (!span) return
    fetchSeconds(stat, span.from, span.to + 1)
      .then((q) => filledFor.current === base && setLive((l) => addMissing(l, liveFromQuery(q, keys, 'fill'))))
      .catch(() => {}) // the next history refresh covers it
  }, [base, live, view.paused, stat, keys])

  const data = useMemo(() => (base ? mergeLive(base, view.paused ? [] : live, range) : null), [base, live, range, view.paused])
  const { open, menu } = useDrill(metric, stat, onOpen, view)
  const info = useCardInfo(stat, metric, q.data?.statistic, q.data?.names)
  const { family, title, unit } = info
  const newest = data?.timestamps[data.timestamps.length - 1]
  const display = stat.display === 'line' ? 'line' : 'area'
  // A breakdown by path (file, share) can show its directory tree; a click there re-roots it with a prefix filter.
  const paths = isPathDim(stat.by)
  const hier = useHierarchy(stat, view, paths && stat.hierarchy ? SHAPE : null)

  return (
    <CardFrame
      info={info}
      query={q}
      onRemove={onRemove}
      badges={q.data?.approximate && <ApproximateBadge notes={q.data.notes ?? []} />}
      actions={
        <>
          <ExportButtons title={title} csv={data && !isEmpty(data) ? () => toCsv(data) : null} png={png} />
          {me.data && can(me.data.role, 'admin') && (
            <button className="icon-button" onClick={() => openAlertFor(stat)} title={stat.by ? `Alert on this statistic, per ${stat.by}` : 'Alert on this statistic'} aria-label="Alert on this statistic" data-testid="alert-on-chart">
              <svg viewBox="0 0 16 16" width="14" height="14" aria-hidden>
                <path d="M8 1.5a4 4 0 0 0-4 4v3L2.5 11h11L12 8.5v-3a4 4 0 0 0-4-4zM6.5 12.5a1.5 1.5 0 0 0 3 0" fill="none" stroke="currentColor" strokeWidth="1.4" strokeLinejoin="round" />
              </svg>
            </button>
          )}
          {coarse && (
            <button
              className="button small"
              aria-pressed={minmax}
              data-testid="minmax-toggle"
              title="Show the busiest and the quietest second inside each point, as dashed lines"
              onClick={() => onChange({ ...stat, minmax: !minmax || undefined })}
            >
              {minmax ? 'hide min/max' : 'min/max'}
            </button>
          )}
          {paths && (
            <button
              className="button small"
              aria-pressed={!!stat.hierarchy}
              data-testid="show-hierarchy"
              title={`The ${stat.by} breakdown over the range as a directory tree (treemap or sunburst); click a directory to filter the chart to it`}
              onClick={() => onChange({ ...stat, hierarchy: stat.hierarchy ? undefined : 'treemap' })}
            >
              {stat.hierarchy ? 'Hide hierarchy' : 'Show hierarchy'}
            </button>
          )}
          {group && time.button}
          <div className="segmented small" role="group" aria-label="Graph style">
            {(['area', 'line'] as const).map((d) => (
              <button
                key={d}
                className={display === d ? 'active' : ''}
                aria-pressed={display === d}
                onClick={() => onChange({ ...stat, display: d })}
                title={d === 'area' ? 'Mountain graph: stacked areas' : 'Line graph'}
              >
                {d === 'area' ? 'Mountain' : 'Line'}
              </button>
            ))}
          </div>
        </>
      }
      footer={
        data && (
          <>
            <span className={`live-dot ${view.paused ? 'paused' : liveError ? 'bad' : live.length ? 'on' : ''}`} />
            <span>{view.paused ? 'paused' : liveError ? `live updates failed: ${liveError}` : live.length ? 'live' : 'waiting for live data'}</span>
            <span className="sep">·</span>
            <span>
              {q.data?.tier} tier, {data.step}s per point
            </span>
            <span className="sep">·</span>
            <span data-testid="last-ts">{newest !== undefined ? `last point ${formatClock(newest)}` : ''}</span>
            {minmax && !extremes && q.data && coarse && (
              <>
                <span className="sep">·</span>
                <span data-testid="minmax-note">{q.data.notes?.find((n) => n.startsWith('No min/max')) ?? 'min/max loading…'}</span>
              </>
            )}
          </>
        )
      }
    >
      {time.toolbar}
      <PrefixChips where={stat.where} onRemove={(key) => onChange({ ...stat, where: withoutFilter(stat.where, key) })} />
      {data && isEmpty(data) && <EmptyState family={family} />}
      {data && !isEmpty(data) && (
        <TimeseriesView
          data={data}
          display={display}
          unit={unit}
          annotations={annotations}
          minmax={extremes}
          group={group && synced ? group : null}
          exporter={png}
          by={stat.by ?? null}
          legend={stat.legend ?? DEFAULT_LEGEND}
          onLegend={(legend) => onChange({ ...stat, legend })}
          elements={q.data?.elements ?? 0}
          onPick={(row, at) => {
            if (row.key === OTHER_KEY) return
            if (row.key === TOTAL_KEY || !stat.by) open({ dim: null, key: '', label: title, at })
            else open({ dim: stat.by, key: row.key, label: row.label, address: row.label !== row.element ? row.element : null, at })
          }}
        />
      )}
      {paths && stat.hierarchy && (
        <>
          {hier.error && (
            <div className="error" role="alert" data-testid="hierarchy-error">
              {hier.error.message}
            </div>
          )}
          {hier.isPending && !hier.error && <div className="loading">Reading the directory tree…</div>}
          {hier.data && (
            <HierarchyView
              result={hier.data}
              mode={stat.hierarchy}
              unit={unit}
              onMode={(mode) => onChange({ ...stat, hierarchy: mode })}
              onRoot={(path) => onChange({ ...stat, where: rootWhere(stat.where, stat.by!, path) })}
            />
          )}
        </>
      )}
      {menu}
    </CardFrame>
  )
}
