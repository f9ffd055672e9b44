// A heat map of a histogram dimension, with band selection, a zoom of its bucket axis and the rate
// per bucket. Gestures: a drag (or a click) selects a band, a shift-click extends it, and a
// shift-drag zooms the bucket axis to the buckets dragged across.
import { useMemo, useRef, useState, type MutableRefObject, type ReactNode } from 'react'
import type { Bucket, HeatmapResult } from '../../api/client'
import { EChart } from '../../components/EChart'
import { formatRate, formatShare } from '../../lib/format'
import { annotationsText, clipAnnotations } from '../annotations/transform'
import type { Band, HeatmapOptions, Span } from './model'
import { RasterPlot } from './Raster'
import { bandBetween, bandLabel, bandRate, bucketRates, cellsRange, rasterGrid, spanBetween, steadyRange, toHeatmapOption, zoomBuckets } from './transform'

interface Props extends HeatmapOptions {
  /** Every bucket the crop kept; the zoom is applied here. */
  result: HeatmapResult
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

function BucketSelect(props: { label: string; value: number; onChange: (e: number) => void; buckets: Bucket[]; testId: string }) {
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
}

function exponentAt(r: HeatmapResult, row: number | null): number | null {
  return row === null ? null : (r.buckets[row]?.index ?? null)
}

const overlaps = (a: Band, b: Band) => a.lo <= b.hi && b.lo <= a.hi
const within = (a: Band, b: Band) => a.lo >= b.lo && a.hi <= b.hi

export function HeatmapView(props: Props) {
  const { result, valueUnit, rateUnit, selection, span, annotations, onSelect, zoom, onZoom, zoomText } = props
  const { memberDims, memberBy, onMemberBy, members, exporter, group } = props
  const zoomed = useMemo(() => zoomBuckets(result, zoom), [result, zoom])
  const shown = zoomed.result
  // The chart over the cells (axes, colour key, band, annotations) depends on the map's shape and
  // colour range only, which a second's new data seldom changes: then ECharts is not touched and
  // only the raster is drawn again.
  const { min, max } = useMemo(() => steadyRange(cellsRange(shown.cells)), [shown])
  const grid = useMemo(() => rasterGrid(shown, { min, max }), [shown, min, max])
  // the newest column's rate, all buckets shown (it grows each second while live)
  const newest = useMemo(() => {
    let sum = 0
    for (let i = (grid.cols - 1) * grid.rows; i >= 0 && i < grid.rate.length; i++) if (grid.rate[i]! > 0) sum += grid.rate[i]!
    return Math.round(sum * 1000) / 1000
  }, [grid])
  const shapeKey = `${shown.dim} ${shown.start} ${shown.end} ${shown.step} ${shown.buckets.map((b) => b.index).join(',')}`
  const shape = useMemo(() => shown, [shapeKey]) // a result of the same shape draws the same chart
  const option = useMemo(
    () => toHeatmapOption(shape, { valueUnit, rateUnit, selection, span, annotations, raster: true, colors: { min, max } }),
    [shape, min, max, valueUnit, rateUnit, selection, span, annotations],
  )
  // Over every bucket, so that a band outside the zoom keeps its rate; the table lists the zoom's.
  const rates = useMemo(() => bucketRates(result), [result])
  const listed = zoom ? rates.filter((r) => r.index >= zoom.lo && r.index <= zoom.hi) : rates
  const anchor = useRef<{ exponent: number | null; col: number } | null>(null)
  const raster = useRef<HTMLCanvasElement | null>(null)
  const first = result.buckets[0]?.index ?? 0
  const last = result.buckets[result.buckets.length - 1]?.index ?? 0
  const [lo, setLo] = useState<number | null>(null)
  const [hi, setHi] = useState<number | null>(null)
  const shownLo = lo ?? selection?.lo ?? first
  const shownHi = hi ?? selection?.hi ?? last
  const pick = (band: Band | null, over: Span | null = null) => {
    setLo(band?.lo ?? null)
    setHi(band?.hi ?? null)
    onSelect(band, band ? over : null)
  }
  const options = [...result.buckets].reverse()
  return (
    <div className="hm">
      <div className="hm-main" data-testid="heatmap-rows" data-rows={shown.buckets.map((b) => b.index).join(',')} data-end={shown.end} data-newest={newest}>
        {shown.buckets.length > 0 ? (
          <RasterPlot
            result={shown}
            grid={grid}
            rateUnit={rateUnit}
            canvas={raster}
            onPress={(cell) => {
              anchor.current = cell && { exponent: exponentAt(shown, cell.row), col: cell.col }
            }}
            onRelease={(cell, shift) => {
              const y = cell && exponentAt(shown, cell.row)
              const from = anchor.current?.exponent ?? null
              const fromCol = anchor.current?.col
              anchor.current = null
              if (y === null || !cell) return
              if (shift && from !== null && from !== y) onZoom(bandBetween(from, y))
              else if (shift && selection) pick(bandBetween(Math.min(selection.lo, y), Math.max(selection.hi, y)), span)
              // a drag across columns selects their time span too; within one column, the whole range
              else pick(bandBetween(from ?? y, y), fromCol !== undefined && fromCol !== cell.col ? spanBetween(shown, fromCol, cell.col) : null)
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
              ariaLabel={`heat map of ${result.dim}${zoom ? `, zoomed to ${zoomText}` : ''}${annotationsText(clipAnnotations(annotations ?? [], result.start, result.end))}`}
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
              title={`Zoom the bucket axis to ${bandLabel(result.buckets, bandBetween(shownLo, shownHi), valueUnit)}`}
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
        {zoom && zoomed.hidden > 0 && (
          <div className="band-note cropped-note" data-testid="zoom-note">
            {formatRate(zoomed.hidden, rateUnit)} outside the zoom not shown
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
            {formatRate(bandRate(rates, selection), rateUnit)} between {bandLabel(result.buckets, selection, valueUnit)}
            {zoom && !within(selection, zoom) && (overlaps(selection, zoom) ? ' (partly outside the zoom)' : ' (outside the zoom)')}
          </div>
        )}
      </aside>
    </div>
  )
}
