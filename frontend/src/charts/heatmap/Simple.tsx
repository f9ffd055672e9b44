// A latency heat map with a title and no tools: for pages that show one beside their facts.
import { useMemo } from 'react'
import type { HeatmapResult } from '../../api/client'
import { EChart } from '../../components/EChart'
import { toHeatmapOption } from './transform'

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
  const option = useMemo(
    () => (result ? toHeatmapOption(result, { valueUnit: 'ns', rateUnit: 'ops/s', selection: null, colors }) : null),
    [result, colors],
  )
  return (
    <div className={className} data-testid={testId}>
      <div className="side-title">{title}</div>
      {error && <div className="error">{error.message}</div>}
      {option &&
        (result!.cells.length ? (
          <EChart option={option} className="hm-chart" ariaLabel={title} testId={`${testId}-chart`} />
        ) : (
          <div className="empty">No NFS operations in this window.</div>
        ))}
    </div>
  )
}
