// A statistic over time: stacked areas (or lines) and the legend table of its elements.
import { useMemo } from 'react'
import { EChart } from '../../components/EChart'
import { PickRow, TopNote } from '../../components/PickRow'
import { formatRate, formatShare } from '../../lib/format'
import { middleEllipsis } from '../palette'
import type { LegendRow, TimeseriesData, TimeseriesOptions } from './model'
import { annotationsText, clipAnnotations } from '../annotations/transform'
import { legendRows, toOption } from './transform'

interface Props extends TimeseriesOptions {
  data: TimeseriesData
  /** The breakdown dimension, shown over the legend. */
  by: string | null
  /** Distinct elements in the range (the legend shows the top ones). */
  elements: number
  onPick: (row: LegendRow, at: { x: number; y: number }) => void
}

export function TimeseriesView({ data, display, unit, by, elements, onPick, annotations }: Props) {
  const option = useMemo(() => toOption(data, { display, unit, annotations }), [data, display, unit, annotations])
  const first = data.timestamps[0] ?? 0
  const marked = clipAnnotations(annotations ?? [], first, (data.timestamps[data.timestamps.length - 1] ?? first) + data.step)
  const rows = useMemo(() => legendRows(data), [data])
  const byKey = useMemo(() => new Map(rows.map((r) => [r.key, r])), [rows])
  return (
    <div className="ts">
      <EChart
        option={option}
        className="ts-chart"
        testId="timeseries-chart"
        ariaLabel={`chart of ${rows.length} series${annotationsText(marked)}`}
        onEvents={{
          click: (e) => {
            const row = e.seriesId !== undefined ? byKey.get(e.seriesId) : undefined
            if (row) onPick(row, { x: e.clientX, y: e.clientY })
          },
        }}
      />
      <div className="legend" data-testid="legend">
        <table className="table legend-table">
          <colgroup>
            <col />
            <col className="col-rate" />
            <col className="col-rate" />
            <col className="col-share" />
          </colgroup>
          <thead>
            <tr>
              <th className="legend-key">{by ?? 'statistic'}</th>
              <th className="num">now</th>
              <th className="num">mean</th>
              <th className="num">share</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <PickRow
                key={r.key}
                testId="legend-row"
                dataKey={r.label}
                title={r.drillable ? `Drill down into ${by} ${r.label}` : 'Break down further'}
                onPick={(at) => onPick(r, at)}
              >
                <td className="legend-key">
                  <span className="swatch" style={{ background: r.color }} />
                  <span className="legend-label" data-testid="legend-label" title={r.label}>
                    {middleEllipsis(r.label, 24)}
                  </span>
                </td>
                <td className="num" data-testid="legend-last">
                  {formatRate(r.last, unit)}
                </td>
                <td className="num">{formatRate(r.mean, unit)}</td>
                <td className="num">{formatShare(r.share)}</td>
              </PickRow>
            ))}
          </tbody>
        </table>
        {by && <TopNote shown={data.keys.length} of={elements} />}
      </div>
    </div>
  )
}
