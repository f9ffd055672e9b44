// A heat map of a histogram dimension, with band selection, a zoom of its bucket axis and the rate
// per bucket. Gestures: a drag (or a click) selects a band, a shift-click extends it, and a
// shift-drag zooms the bucket axis to the buckets dragged across.
import { memo, useMemo, useRef, useState, type MutableRefObject, type ReactNode } from 'react'
import type { Bucket } from '../../api/client'
import { EChart } from '../../components/EChart'
import { formatClock, formatDateTime, formatRate, formatShare } from '../../lib/format'
import { annotationsText, clipAnnotations } from '../annotations/transform'
import type { Band, HeatGrid, HeatmapOptions, HeatShape, Span } from './model'
import { RasterPlot } from './Raster'
import { bandBetween, bandLabel, bandRate, bucketRates, columnSum, gridRange, spanBetween, steadyRange, toHeatmapOption, zoomLabel, zoomRows } from './transform'

interface Props extends HeatmapOptions {
  /** The cells, merged into in place while live: `version` says when they changed. */
  grid: HeatGrid
  version: number
  /** rowSums of the grid at this version. */
  sums: Float64Array
  /** The rows the crop kept (from the lowest); the zoom is applied here. */
  keep: number
  /** A band selected, over the columns of `span` when a drag went across them (null: the whole range). */
  onSelect: (band: Band | null, span: Span | null) => void
  span: Span | null
  /** The bucket axis shows only these buckets (null: all of them). */
  zoom: Band | null
  onZoom: (zoom: Band | null) => void
  /** How the zoom reads, e.g. "1.05 ms – 8.39 ms". */
  zoomText: string
  /** Dimensions the members of a band can be listed by. */
  memberDims: string[]
  memberBy: string
  onMemberBy: (dim: string) => void
  /** The members list of the selected band, drawn under the controls. */
  members: ReactNode
  /** Filled with the chart's PNG export. */
  exporter?: MutableRefObject<(() => string) | null>
  /** The worksheet's crosshair group, when synced. */
  group?: string | null
}

// the same buckets and value draw the same list: not again each second
const BucketSelect = memo(function BucketSelect(props: { label: string; value: number; onChange: (e: number) => void; buckets: Bucket[]; testId: string }) {
  return (
    <label>
      {props.label}
      <select value={props.value} onChange={(e) => props.onChange(Number(e.target.value))} data-testid={props.testId}>
        {props.buckets.map((b) => (
          <option key={b.index} value={b.index}>
            {b.label}
          </option>
        ))}
      </select>
    </label>
  )
})

function exponentAt(r: HeatShape, row: number | null): number | null {
  return row === null ? null : (r.buckets[row]?.index ?? null)
}

const overlaps = (a: Band, b: Band) => a.lo <= b.hi && b.lo <= a.hi
const within = (a: Band, b: Band) => a.lo >= b.lo && a.hi <= b.hi

export function HeatmapView(props: Props) {
  const { grid, version, sums, keep, valueUnit, rateUnit, selection, span, annotations, onSelect, zoom, onZoom, zoomText } = props
  const { memberDims, memberBy, onMemberBy, members, exporter, group } = props
  // the rows [r0, r1) drawn
  const { lo: r0, hi: r1, hidden } = useMemo(() => zoomRows(grid.buckets, keep, sums, grid.cols, zoom), [grid.buckets, grid.cols, sums, keep, zoom])
  // The chart over the cells (bucket axis, colour key) depends on the rows drawn and the colour
  // range, which a second's new data (or a full read each minute) seldom changes: then ECharts is
  // not touched and only the raster is drawn again, its newest columns or, after a new column at
  // the end, all of them, with the time axis's labels, the annotations and the selected band.
  const rowKey = `${grid.dim} ${r0} ${r1} ${grid.buckets.map((b) => b.index).join(',')}`
  const buckets = useMemo(() => grid.buckets.slice(r0, r1), [rowKey]) // the same rows as before: the same array
  const shown: HeatShape = useMemo(
    () => ({ dim: grid.dim, step: grid.step, start: grid.start, end: grid.end, timestamps: grid.timestamps, buckets }),
    [grid, grid.timestamps, buckets], // a new column at the end replaces grid.timestamps
  )
  // the cells as this version has them
  const range = useMemo(() => steadyRange(gridRange(grid, r0, r1)), [grid, version, r0, r1])
  const { min, max } = range
  // the newest column's rate, all buckets shown (it grows each second while live)
  const newest = Math.round(columnSum(grid, grid.cols - 1, r0, r1) * 1000) / 1000
  // Neither a new column nor a band selected changes the chart (the raster draws the time axis's
  // labels, the annotations and the band, a span's moving with its columns).
  const option = useMemo(
    () => toHeatmapOption(shown, { valueUnit, rateUnit, selection: null, raster: true, colors: { min, max } }),
    [buckets, grid.cols, min, max, valueUnit, rateUnit], // what of `shown` the option reads
  )
  const kept = useMemo(() => grid.buckets.slice(0, keep), [grid.buckets, keep])
  // Over every bucket the crop kept, so that a band outside the zoom keeps its rate; the table lists the zoom's.
  const rates = useMemo(() => bucketRates(kept, sums, grid.cols), [kept, sums, grid.cols])
  const listed = zoom ? rates.filter((r) => r.index >= zoom.lo && r.index <= zoom.hi) : rates
  // where a drag began: its bucket, and its column's second (a live map moves on under the pointer)
  const anchor = useRef<{ exponent: number | null; ts: number } | null>(null)
  const raster = useRef<HTMLCanvasElement | null>(null)
  const first = kept[0]?.index ?? 0
  const last = kept[kept.length - 1]?.index ?? 0
  const [lo, setLo] = useState<number | null>(null)
  const [hi, setHi] = useState<number | null>(null)
  const shownLo = lo ?? selection?.lo ?? first
  const shownHi = hi ?? selection?.hi ?? last
  const pick = (band: Band | null, over: Span | null = null) => {
    setLo(band?.lo ?? null)
    setHi(band?.hi ?? null)
    onSelect(band, band ? over : null)
  }
  const options = useMemo(() => [...kept].reverse(), [kept])
  // the band the raster draws, said in the chart's label
  const selected = selection ? `, band ${zoomLabel(kept, selection, valueUnit)} selected${span ? ` from ${formatDateTime(span.start)} to ${formatClock(span.end)}` : ''}` : ''
  return (
    <div className="hm">
      <div className="hm-main" data-testid="heatmap-rows" data-rows={shown.buckets.map((b) => b.index).join(',')} data-end={shown.end} data-newest={newest}>
        {shown.buckets.length > 0 ? (
          <RasterPlot
            grid={grid}
            version={version}
            lo={r0}
            hi={r1}
            range={range}
            annotations={annotations}
            selection={selection}
            span={span}
            rateUnit={rateUnit}
            canvas={raster}
            onPress={(cell) => {
              anchor.current = cell && { exponent: exponentAt(shown, cell.row), ts: shown.timestamps[cell.col]! }
            }}
            onRelease={(cell, shift) => {
              const y = cell && exponentAt(shown, cell.row)
              const from = anchor.current?.exponent ?? null
              const fromTs = anchor.current?.ts
              anchor.current = null
              if (y === null || !cell) return
              const ts = shown.timestamps[cell.col]!
              if (shift && from !== null && from !== y) onZoom(bandBetween(from, y))
              else if (shift && selection) pick(bandBetween(Math.min(selection.lo, y), Math.max(selection.hi, y)), span)
              // a drag across columns selects their time span too; within one column, the whole range
              else pick(bandBetween(from ?? y, y), fromTs !== undefined && fromTs !== ts ? spanBetween(fromTs, ts, shown.step) : null)
            }}
          >
            <EChart
              exporter={exporter}
              underlay={raster}
              option={option}
              group={group}
              times={shown.timestamps}
              className="hm-chart"
              testId="heatmap-chart"
              ariaLabel={`heat map of ${grid.dim}${zoom ? `, zoomed to ${zoomText}` : ''}${selected}${annotationsText(clipAnnotations(annotations ?? [], shown.start, shown.end))}`}
            />
          </RasterPlot>
        ) : (
          <div className="hm-chart empty" data-testid="zoom-empty">
            No bucket of {zoomText} has events in this range.{' '}
            <button type="button" className="button small" onClick={() => onZoom(null)}>
              Show every bucket
            </button>
          </div>
        )}
        <div className="hm-hint">
          Drag across buckets (or click one, shift-click to extend) to select a band, across columns too for its time span; shift-drag to zoom the bucket axis to them.
        </div>
      </div>
      <aside className="hm-side">
        <form
          className="band-form"
          data-testid="band-form"
          onSubmit={(e) => {
            e.preventDefault()
            pick(bandBetween(shownLo, shownHi))
          }}
        >
          <div className="band-row">
            <BucketSelect label="from" value={shownLo} onChange={setLo} buckets={options} testId="band-lo" />
            <BucketSelect label="to" value={shownHi} onChange={setHi} buckets={options} testId="band-hi" />
            <button
              type="button"
              className="button small"
              data-testid="zoom-band"
              title={`Zoom the bucket axis to ${bandLabel(kept, bandBetween(shownLo, shownHi), valueUnit)}`}
              onClick={() => onZoom(bandBetween(shownLo, shownHi))}
            >
              Zoom to band
            </button>
          </div>
          <div className="band-row">
            <label>
              by
              <select value={memberBy} onChange={(e) => onMemberBy(e.target.value)} data-testid="band-by">
                {memberDims.map((d) => (
                  <option key={d} value={d}>
                    {d}
                  </option>
                ))}
              </select>
            </label>
            <button type="submit" className="button button-primary" data-testid="show-members">
              Show members
            </button>
            {selection && (
              <button type="button" className="button" onClick={() => pick(null)}>
                Clear
              </button>
            )}
          </div>
        </form>
        {members}
        <div className="side-title">Rate per band{zoom ? `, ${zoomText} (zoomed)` : ''}</div>
        {zoom && hidden > 0 && (
          <div className="band-note cropped-note" data-testid="zoom-note">
            {formatRate(hidden, rateUnit)} outside the zoom not shown
          </div>
        )}
        <table className="table band-table" data-testid="band-rates">
          <tbody>
            {listed
              .filter((r) => r.rate > 0)
              .map((r) => (
                <tr
                  key={r.index}
                  data-index={r.index}
                  data-rate={r.rate}
                  className={selection && r.index >= selection.lo && r.index <= selection.hi ? 'selected' : ''}
                  onClick={() => pick(bandBetween(r.index, r.index))}
                  title="Select this band"
                >
                  <td className="num">{formatRate(r.rate, rateUnit)}</td>
                  <td>{r.label}</td>
                  <td className="num muted">{formatShare(r.share)}</td>
                </tr>
              ))}
          </tbody>
        </table>
        {selection && (
          <div className="band-sum" data-testid="band-sum">
            {formatRate(bandRate(rates, selection), rateUnit)} between {bandLabel(kept, selection, valueUnit)}
            {zoom && !within(selection, zoom) && (overlaps(selection, zoom) ? ' (partly outside the zoom)' : ' (outside the zoom)')}
          </div>
        )}
      </aside>
    </div>
  )
}
