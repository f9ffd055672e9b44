// A latency heat map with a title and no tools: for pages that show one beside their facts. Its
// cells are a raster beneath the chart, as on the worksheet (Raster.tsx).
import { useMemo, useRef } from 'react'
import type { HeatmapResult } from '../../api/client'
import { EChart } from '../../components/EChart'
import { RasterPlot } from './Raster'
import { gridOf, gridRange, toHeatmapOption } from './transform'

interface Props {
  result: HeatmapResult | undefined
  error: Error | null
  title: string
  testId: string
  className?: string
  /** The colour scale of heat maps shown beside this one (see onSharedScales). */
  colors?: { min: number; max: number }
}

export function SimpleHeatmap({ result, error, title, testId, className, colors }: Props) {
  const grid = useMemo(() => (result ? gridOf(result) : null), [result])
  const range = useMemo(() => colors ?? (grid ? gridRange(grid, 0, grid.rows) : null), [grid, colors])
  const option = useMemo(
    () =>
      grid && range
        ? toHeatmapOption(grid, { valueUnit: 'ns', rateUnit: 'ops/s', selection: null, raster: true, colors: range })
        : null,
    [grid, range],
  )
  const raster = useRef<HTMLCanvasElement | null>(null)
  const chartId = `${testId}-chart`
  return (
    <div className={className} data-testid={testId}>
      <div className="side-title">{title}</div>
      {error && <div className="error">{error.message}</div>}
      {option &&
        grid &&
        range &&
        (result!.cells.length ? (
          <RasterPlot grid={grid} version={grid.version} lo={0} hi={grid.rows} range={range} rateUnit="ops/s" canvas={raster} chartTestId={chartId}>
            <EChart option={option} className="hm-chart" ariaLabel={title} testId={chartId} underlay={raster} />
          </RasterPlot>
        ) : (
          <div className="empty">No NFS operations in this window.</div>
        ))}
    </div>
  )
}
