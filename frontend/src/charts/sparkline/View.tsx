// A status tile: the headline value and a sparkline of the recent range.
import { useMemo } from 'react'
import { EChart } from '../../components/EChart'
import type { SparklinePoint, TileView } from './model'
import { toSparklineOption } from './transform'

export function SparklineTile({ tile, onOpen, demo }: { tile: TileView; onOpen: () => void; demo: boolean }) {
  const option = useMemo(() => toSparklineOption(tile.points), [tile.points])
  return (
    <button className="tile" onClick={onOpen} data-testid={`tile-${tile.id}`} title={`Open ${tile.title} in the worksheet`}>
      <div className="tile-head">
        <span className="tile-title">{tile.title}</span>
        {demo && <span className="badge badge-demo">demo data</span>}
      </div>
      <div className="tile-value" data-testid="tile-value">
        {tile.value}
      </div>
      <EChart option={option} className="tile-spark" ariaLabel={`${tile.title} over the last minutes`} />
    </button>
  )
}

/** A bare sparkline (no tile), e.g. a probe's own cost over the last minutes. */
export function Sparkline({ points, label, className, testId }: { points: SparklinePoint[]; label: string; className?: string; testId?: string }) {
  const option = useMemo(() => toSparklineOption(points), [points])
  return <EChart option={option} className={className} ariaLabel={label} testId={testId} />
}
