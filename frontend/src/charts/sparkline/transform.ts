// Pure transforms: status tiles -> tile views (value, weather, span) and sparkline options.
import type { StatusTile } from '../../api/client'
import type { ChartOption } from '../../components/EChart'
import { formatRate } from '../../lib/format'
import { WEATHER, type SparklinePoint, type TileView, type Weather } from './model'

export function sparkPoints(timestamps: number[], values: number[]): SparklinePoint[] {
  const n = Math.min(timestamps.length, values.length)
  const out: SparklinePoint[] = []
  for (let i = 0; i < n; i++) {
    const v = values[i]!
    out.push({ ts: timestamps[i]!, value: Number.isFinite(v) ? v : 0 })
  }
  return out
}

/** The weather for a value: sunny below the first of four ascending thresholds, then one level up at
 * each threshold reached (at or above the fourth: hurricane). */
export function weatherOf(value: number, thresholds: number[]): Weather {
  let level = 0
  for (const t of thresholds) if (value >= t) level++
  return WEATHER[Math.min(level, WEATHER.length - 1)]!
}

/** Each level's range in the tile's unit, for the tile's tooltip. */
export function weatherScale(thresholds: number[], unit: string): string {
  const at = (i: number) => formatRate(thresholds[i], unit)
  return WEATHER.map((w, i) => (i === 0 ? `${w} below ${at(0)}` : `${w} from ${at(i - 1)}`)).join('; ')
}

/** A sparkline's reach in words: 'last 7 days', 'last 5 h', 'last 12 min'. */
export function spanText(seconds: number): string {
  if (seconds >= 2 * 86400) return `last ${Math.round(seconds / 86400)} days`
  if (seconds >= 2 * 3600) return `last ${Math.round(seconds / 3600)} h`
  if (seconds >= 120) return `last ${Math.round(seconds / 60)} min`
  return `last ${Math.max(1, Math.round(seconds))} s`
}

/** The range ends at now, so its last step is still filling: leave it out rather than draw a dip.
 * The span is what the points drawn cover (shorter than a week while the store is younger). */
export function tileView(t: StatusTile): TileView {
  const all = sparkPoints(t.timestamps, t.values)
  const points = all.length > 1 ? all.slice(0, -1) : all
  return {
    id: t.id,
    title: t.title,
    value: t.error ? '–' : formatRate(t.value, t.unit),
    points,
    // judged on a trailing mean (the server's), so one bursty second does not flip it
    weather: t.error ? null : weatherOf(t.level, t.thresholds),
    span: spanText(Math.max(points.length, 1) * t.step),
    scale: weatherScale(t.thresholds, t.unit),
    level: `mean of the last ${t.level_seconds} s: ${formatRate(t.level, t.unit)}`,
    error: t.error ?? null,
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
