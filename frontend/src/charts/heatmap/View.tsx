// A heat map of a histogram dimension, with band selection and the rate per bucket.
import { useMemo, useRef, useState, type MutableRefObject, type ReactNode } from 'react'
import type { Bucket, HeatmapResult } from '../../api/client'
import { EChart } from '../../components/EChart'
import { formatRate, formatShare } from '../../lib/format'
import { annotationsText, clipAnnotations } from '../annotations/transform'
import type { Band, HeatmapOptions } from './model'
import { bandBetween, bandLabel, bandRate, bucketRates, toHeatmapOption } from './transform'

interface Props extends HeatmapOptions {
  result: HeatmapResult
  onSelect: (band: Band | null) => void
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

function exponentAt(r: HeatmapResult, value: unknown): number | null {
  const y = Array.isArray(value) ? value[1] : undefined
  return typeof y === 'number' ? (r.buckets[y]?.index ?? null) : null
}

export function HeatmapView({ result, valueUnit, rateUnit, selection, annotations, onSelect, memberDims, memberBy, onMemberBy, members, exporter, group }: Props) {
  const option = useMemo(
    () => toHeatmapOption(result, { valueUnit, rateUnit, selection, annotations }),
    [result, valueUnit, rateUnit, selection, annotations],
  )
  const rates = useMemo(() => bucketRates(result), [result])
  const anchor = useRef<number | null>(null)
  const first = result.buckets[0]?.index ?? 0
  const last = result.buckets[result.buckets.length - 1]?.index ?? 0
  const [lo, setLo] = useState<number | null>(null)
  const [hi, setHi] = useState<number | null>(null)
  const shownLo = lo ?? selection?.lo ?? first
  const shownHi = hi ?? selection?.hi ?? last
  const pick = (band: Band | null) => {
    setLo(band?.lo ?? null)
    setHi(band?.hi ?? null)
    onSelect(band)
  }
  const options = [...result.buckets].reverse()
  return (
    <div className="hm">
      <div className="hm-main">
        <EChart
          exporter={exporter}
          option={option}
          group={group}
          times={result.timestamps}
          className="hm-chart"
          testId="heatmap-chart"
          ariaLabel={`heat map of ${result.dim}${annotationsText(clipAnnotations(annotations ?? [], result.start, result.end))}`}
          onEvents={{
            mousedown: (e) => {
              anchor.current = exponentAt(result, e.value)
            },
            mouseup: (e) => {
              const y = exponentAt(result, e.value)
              if (y === null) return
              if (e.shiftKey && selection) pick(bandBetween(Math.min(selection.lo, y), Math.max(selection.hi, y)))
              else pick(bandBetween(anchor.current ?? y, y))
              anchor.current = null
            },
          }}
        />
        <div className="hm-hint">Drag across buckets (or click one, shift-click to extend) to select a band.</div>
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
        <div className="side-title">Rate per band</div>
        <table className="table band-table" data-testid="band-rates">
          <tbody>
            {rates
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
          </div>
        )}
      </aside>
    </div>
  )
}
