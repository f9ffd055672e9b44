// A statistic over time: stacked areas (or lines) and the legend table of its elements. The
// legend sorts by any column, searches its elements, and a shift-click on an element (in the
// legend or the chart) highlights it across the chart. How the legend is shown is the caller's
// (the worksheet keeps it in the URL).
import { useMemo, type MutableRefObject } from 'react'
import { EChart } from '../../components/EChart'
import { PickRow, TopNote } from '../../components/PickRow'
import { formatRate, formatShare } from '../../lib/format'
import { middleEllipsis } from '../palette'
import type { LegendRow, LegendSort, LegendView, TimeseriesData, TimeseriesOptions } from './model'
import { annotationsText, clipAnnotations } from '../annotations/transform'
import { arrangeLegend, legendRows, toOption } from './transform'

interface Props extends TimeseriesOptions {
  data: TimeseriesData
  /** The breakdown dimension, shown over the legend. */
  by: string | null
  /** Distinct elements in the range (the legend shows the top ones). */
  elements: number
  onPick: (row: LegendRow, at: { x: number; y: number }) => void
  /** Charts of one group share their crosshair. */
  group?: string | null
  /** Filled with the chart's PNG export. */
  exporter?: MutableRefObject<(() => string) | null>
  legend: LegendView
  onLegend: (legend: LegendView) => void
}

const COLUMNS: Array<{ sort: LegendSort; label: string; className?: string }> = [
  { sort: 'last', label: 'now', className: 'num' },
  { sort: 'mean', label: 'mean', className: 'num' },
]

export function TimeseriesView({ data, display, unit, by, elements, onPick, annotations, group, exporter, legend, onLegend, minmax }: Props) {
  const { search, highlight } = legend
  const sort = { by: legend.sort, desc: legend.desc }
  const rows = useMemo(() => legendRows(data), [data])
  const lit = highlight !== null && rows.some((r) => r.key === highlight) ? highlight : null
  const option = useMemo(() => toOption(data, { display, unit, annotations, highlight: lit, minmax }), [data, display, unit, annotations, lit, minmax])
  const first = data.timestamps[0] ?? 0
  const marked = clipAnnotations(annotations ?? [], first, (data.timestamps[data.timestamps.length - 1] ?? first) + data.step)
  const shown = useMemo(() => arrangeLegend(rows, sort.by, sort.desc, search), [rows, sort.by, sort.desc, search])
  const byKey = useMemo(() => new Map(rows.map((r) => [r.key, r])), [rows])
  const toggle = (key: string) => onLegend({ ...legend, highlight: lit === key ? null : key })
  const sortBy = (col: LegendSort) => onLegend({ ...legend, sort: col, desc: sort.by === col ? !sort.desc : col !== 'name' })
  const aria = (col: LegendSort) => (sort.by === col ? (sort.desc ? 'descending' : 'ascending') : 'none')
  const arrow = (col: LegendSort) => (sort.by === col ? (sort.desc ? ' ▾' : ' ▴') : '')
  return (
    <div className="ts">
      <EChart
        option={option}
        className="ts-chart"
        testId="timeseries-chart"
        group={group}
        exporter={exporter}
        ariaLabel={`chart of ${rows.length} series${annotationsText(marked)}${lit ? `, ${byKey.get(lit)?.label} highlighted` : ''}`}
        onEvents={{
          click: (e) => {
            const row = e.seriesId !== undefined ? byKey.get(e.seriesId) : undefined
            if (row && e.shiftKey) toggle(row.key)
            else if (row) onPick(row, { x: e.clientX, y: e.clientY })
          },
        }}
      />
      <div className="legend" data-testid="legend">
        {rows.length > 5 && (
          <input
            className="legend-search"
            type="search"
            placeholder={`search these ${rows.length}`}
            aria-label={`search the ${by ?? 'element'} legend`}
            data-testid="legend-search"
            value={search}
            onChange={(e) => onLegend({ ...legend, search: e.target.value })}
          />
        )}
        <table className="table legend-table">
          <colgroup>
            <col />
            <col className="col-rate" />
            <col className="col-rate" />
            <col className="col-share" />
          </colgroup>
          <thead>
            <tr>
              <th className="legend-key" aria-sort={aria('name')}>
                <button className="th-sort" data-testid="legend-sort-name" onClick={() => sortBy('name')}>
                  {by ?? 'statistic'}
                  {arrow('name')}
                </button>
              </th>
              {COLUMNS.map((c) => (
                <th key={c.sort} className={c.className} aria-sort={aria(c.sort)}>
                  <button className="th-sort" data-testid={`legend-sort-${c.sort}`} onClick={() => sortBy(c.sort)}>
                    {c.label}
                    {arrow(c.sort)}
                  </button>
                </th>
              ))}
              <th className="num">share</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((r) => (
              <PickRow
                key={r.key}
                testId="legend-row"
                dataKey={r.element}
                className={lit === r.key ? 'legend-lit' : lit ? 'legend-dim' : ''}
                title={`${r.drillable ? `Drill down into ${by} ${r.hover}` : 'Break down further'}; shift-click to highlight`}
                onPick={(at) => onPick(r, at)}
                onShiftPick={() => toggle(r.key)}
              >
                <td className="legend-key">
                  <span className="swatch" style={{ background: r.color }} />
                  <span className="legend-label" data-testid="legend-label" title={r.hover}>
                    {middleEllipsis(r.label, 24)}
                  </span>
                </td>
                <td className="num" data-testid="legend-last" data-value={r.last}>
                  {formatRate(r.last, unit)}
                </td>
                <td className="num" data-testid="legend-mean" data-value={r.mean}>
                  {formatRate(r.mean, unit)}
                </td>
                <td className="num">{formatShare(r.share)}</td>
              </PickRow>
            ))}
          </tbody>
        </table>
        {search && shown.length === 0 && <div className="legend-foot">no {by ?? 'element'} shown here holds “{search}”</div>}
        {by && <TopNote shown={data.keys.length} of={elements} />}
      </div>
    </div>
  )
}
