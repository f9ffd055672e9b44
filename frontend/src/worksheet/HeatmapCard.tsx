// A heat-map card: a histogram dimension over time, with bands and who is in them.
import { useMemo, useRef, useState } from 'react'
import { useHeatmap, useHeatmapTail, useMembers, useAnnotations, type MembersRequest } from '../api/hooks'
import type { Band, Span } from '../charts/heatmap/model'
import { spanView } from '../state/time'
import { bandLabel, cropRows, gridOf, heatmapCsv, mergeTailInto, nextCrop, rowSums, zoomLabel } from '../charts/heatmap/transform'
import { HeatmapView } from '../charts/heatmap/View'
import { EmptyState } from '../components/EmptyState'
import { PickRow, TopNote } from '../components/PickRow'
import { memberDims } from '../lib/drill'
import { formatAmount, formatClock, formatDateTime, formatRate, formatShare } from '../lib/format'
import { elementLabel, HEAT_HINT, middleEllipsis } from '../charts/palette'
import { addressOf, elementHover, elementName } from '../lib/names'
import { useTheme } from '../lib/theme'
import { marked } from '../lib/timing'
import { CardFrame, useCardInfo } from './CardFrame'
import { useChartTime } from './ChartTime'
import type { CardProps } from './TimeseriesCard'
import { ExportButtons } from './ExportButtons'
import { useDrill } from './useDrill'

export function HeatmapCard({ stat, view: worksheet, metric, onOpen, onChange, onRemove, group }: CardProps) {
  const time = useChartTime(stat, worksheet, onChange)
  const { view, synced } = time
  const full = useHeatmap(stat, view)
  // between full reads, the newest columns each second
  const tail = useHeatmapTail(stat, view, full.data)
  // an update starts (a full read's grid built included): make bench times it to the chart drawn
  useMemo(() => marked('loupe:heatmap-data'), [full.data, tail.data, view.paused])
  // The cells in one grid of typed arrays, built at each full read; each second's tail is merged
  // into it in place (merging one again changes nothing), and `version` says it changed.
  const grid = useMemo(() => (full.data ? gridOf(full.data) : null), [full.data])
  const version = useMemo(() => {
    if (grid && !view.paused) mergeTailInto(grid, tail.data)
    return grid?.version ?? 0
  }, [grid, tail.data, view.paused])
  const sums = useMemo(() => grid && rowSums(grid), [grid, version])
  const filled = !!sums?.some((v) => v > 0)
  const annotations = useAnnotations(view)
  const dim = stat.by ?? 'latency'
  const dims = useMemo(() => (metric ? memberDims(metric, stat) : []), [metric, stat])
  const [band, setBand] = useState<Band | null>(null)
  const [span, setSpan] = useState<Span | null>(null) // the band's columns, when a drag went across them
  const [by, setBy] = useState<string | null>(null)
  const theme = useTheme()
  const crop = stat.crop ?? 0 // in the URL, so that a link shows the same crop
  const zoom = stat.zoom ?? null // and the same bucket zoom
  const png = useRef<(() => string) | null>(null)
  const memberBy = by && dims.includes(by) ? by : (dims.find((d) => d === 'client') ?? dims[0] ?? 'client')
  const req: MembersRequest | null = band ? { dim, lo: band.lo, hi: band.hi, by: memberBy, span } : null
  const members = useMembers(stat, view, req)
  const { open, menu } = useDrill(metric, stat, onOpen, view)
  const info = useCardInfo(stat, metric, full.data?.statistic, full.data?.names)
  const names = members.data?.names
  const { family, unit } = info
  const hist = metric?.histograms.find((h) => h.name === dim)
  const valueUnit = hist?.unit ?? (dim === 'latency' ? 'ns' : 'bytes')
  const cropped = useMemo(() => (grid && sums ? cropRows(grid.buckets, sums, grid.cols, crop) : null), [grid, sums, crop])
  const zoomText = zoom ? zoomLabel(grid?.buckets ?? [], zoom, valueUnit) : ''
  const setZoom = (z: Band | null) => onChange({ ...stat, zoom: z ?? undefined })

  const membersPanel = band && (
    <div className="members" data-testid="members">
      {members.error && <div className="error">{members.error.message}</div>}
      {members.data && (
        <>
          <div className="side-title" data-testid="members-title">
            {formatRate(members.data.total, unit)} between {grid ? bandLabel(grid.buckets, band, valueUnit) : ''} by {memberBy}
            {span && ` from ${formatDateTime(span.start)} to ${formatClock(span.end)}`}
          </div>
          {members.data.rows.length === 0 && <div className="muted">Nobody in this band {span ? 'then' : 'over the range'}.</div>}
          <table className="table members-table">
            <tbody>
              {members.data.rows.map((r) => (
                <PickRow
                  key={r.key}
                  testId="member-row"
                  dataKey={elementLabel(r.key)}
                  title={`Drill down into ${memberBy} ${elementHover(memberBy, r.key, names)}`}
                  onPick={(at) =>
                    open({
                      dim: memberBy,
                      key: r.key,
                      label: elementName(memberBy, r.key, names),
                      address: addressOf(memberBy, r.key, names),
                      at,
                      extraWhere: { [dim]: [`${band.lo}:${band.hi}`] },
                      time: (span && spanView(span.start, span.end)) ?? undefined,
                    })
                  }
                >
                  <td className="legend-label" title={elementHover(memberBy, r.key, names)}>
                    {middleEllipsis(elementName(memberBy, r.key, names), 30)}
                  </td>
                  <td className="num">{formatRate(r.value, unit)}</td>
                  <td className="num muted">{formatShare(r.share)}</td>
                </PickRow>
              ))}
            </tbody>
          </table>
          <TopNote shown={members.data.rows.length} of={members.data.elements} />
        </>
      )}
      {members.isPending && <div className="loading">Finding members…</div>}
    </div>
  )

  return (
    <CardFrame
      info={info}
      query={full}
      onRemove={onRemove}
      badges={
        <>
          <span className="badge">heat map</span>
          {zoom && (
            <span className="badge badge-zoom" data-testid="zoom-badge">
              zoomed {zoomText}
            </span>
          )}
        </>
      }
      actions={
        <>
          {/* The CSV is every bucket as fetched (crop and zoom are how it is shown); the PNG is what is drawn. */}
          <ExportButtons title={info.title} csv={grid && filled ? () => heatmapCsv(grid, unit) : null} png={png} />
          {zoom && (
            <button
              className="button small"
              data-testid="reset-zoom"
              title={`Show every bucket again (the bucket axis is zoomed to ${zoomText})`}
              onClick={() => setZoom(null)}
            >
              reset zoom
            </button>
          )}
          <button
            className={`button small ${crop ? 'button-warn' : ''}`}
            data-testid="crop-outliers"
            data-crop={crop}
            title="Crop outliers: hide the top 0.1 %, 1 % or 5 % of events so the bulk gets the height (click to cycle)"
            onClick={() => onChange({ ...stat, crop: nextCrop(crop) })}
          >
            {crop ? `cropped ${crop} %` : 'crop outliers'}
          </button>
          {group && time.button}
        </>
      }
      footer={
        full.data && (
          <>
            <span className={`live-dot ${view.paused ? 'paused' : 'on'}`} />
            <span>{view.paused ? 'paused' : 'refreshing'}</span>
            <span className="sep">·</span>
            <span>
              {full.data.tier} tier, {full.data.step}s per column, colour on a log scale ({HEAT_HINT[theme]})
            </span>
            {cropped?.above && (
              <>
                <span className="sep">·</span>
                <span className="cropped-note" data-testid="crop-note">
                  {formatRate(cropped.hidden, unit)} at {cropped.above.lo ? formatAmount(cropped.above.lo, valueUnit) : '0'} and above not shown (top {crop} % cropped)
                </span>
              </>
            )}
          </>
        )
      }
    >
      {time.toolbar}
      {grid && !filled && <EmptyState family={family} />}
      {grid && sums && cropped && filled && (
        <HeatmapView
          grid={grid}
          version={version}
          sums={sums}
          keep={cropped.keep}
          exporter={png}
          group={group && synced ? group : null}
          valueUnit={valueUnit}
          rateUnit={unit}
          selection={band}
          span={span}
          annotations={annotations}
          onSelect={(b, s) => {
            setBand(b)
            setSpan(s)
          }}
          zoom={zoom}
          onZoom={setZoom}
          zoomText={zoomText}
          memberDims={dims}
          memberBy={memberBy}
          onMemberBy={setBy}
          members={membersPanel}
        />
      )}
      {menu}
    </CardFrame>
  )
}
