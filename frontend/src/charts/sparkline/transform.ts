// Pure transforms: status tiles -> tile views and sparkline options.
import type { StatusTile } from '../../api/client'
import type { ChartOption } from '../../components/EChart'
import { formatRate } from '../../lib/format'
import type { SparklinePoint, TileView } from './model'

export function sparkPoints(timestamps: number[], values: number[]): SparklinePoint[] {
  const n = Math.min(timestamps.length, values.length)
  const out: SparklinePoint[] = []
  for (let i = 0; i < n; i++) {
    const v = values[i]!
    out.push({ ts: timestamps[i]!, value: Number.isFinite(v) ? v : 0 })
  }
  return out
}

/** The range ends at now, so its last step is still filling: leave it out rather than draw a dip. */
export function tileView(t: StatusTile): TileView {
  const points = sparkPoints(t.timestamps, t.values)
  return {
    id: t.id,
    title: t.title,
    value: formatRate(t.value, t.unit),
    points: points.length > 1 ? points.slice(0, -1) : points,
  }
}

export function toSparklineOption(points: SparklinePoint[], color = '#2f6fde'): ChartOption {
  const max = points.reduce((m, p) => Math.max(m, p.value), 0)
  return {
    animation: false,
    grid: { left: 0, right: 0, top: 2, bottom: 0 },
    xAxis: { type: 'time', show: false },
    yAxis: { type: 'value', show: false, min: 0, max: max > 0 ? max * 1.1 : 1 },
    series: [
      {
        type: 'line',
        data: points.map((p) => [p.ts * 1000, p.value]),
        showSymbol: false,
        symbol: 'none',
        silent: true,
        sampling: 'lttb',
        lineStyle: { width: 1.5, color },
        areaStyle: { color, opacity: 0.15 },
      },
    ],
  }
}
