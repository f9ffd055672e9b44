import { describe, expect, it } from 'vitest'
import type { StatusTile } from '../../api/client'
import { sparkPoints, spanText, tileView, toSparklineOption, weatherOf, weatherScale } from './transform'

const tile: StatusTile = {
  id: 'net_in',
  title: 'Network in',
  unit: 'MB/s',
  metric: 'net.bytes',
  where: { direction: ['in'] },
  by: 'interface',
  scale: 1e-6,
  divide_by_cpus: false,
  thresholds: [10, 20, 30, 40],
  value: 12.34,
  level: 12.34,
  level_seconds: 10,
  timestamps: [100, 110, 120, 130],
  values: [10, 20, Number.NaN, 12],
  span_start: 100,
  step: 10,
}

describe('weather', () => {
  const th = [100, 200, 300, 400]
  // value -> level: below the first threshold sunny; at a threshold, that threshold's level
  const table: Array<[number, string]> = [
    [0, 'sunny'],
    [99.9, 'sunny'],
    [100, 'partly cloudy'],
    [199, 'partly cloudy'],
    [200, 'cloudy'],
    [300, 'stormy'],
    [399.99, 'stormy'],
    [400, 'hurricane'],
    [1e12, 'hurricane'],
    [-5, 'sunny'],
    [Number.NaN, 'sunny'],
  ]
  it.each(table)('%s is %s', (value, level) => {
    expect(weatherOf(value, th)).toBe(level)
  })

  it('works on fractional and negative thresholds', () => {
    expect(weatherOf(0.5, [0.1, 0.2, 0.3, 0.4])).toBe('hurricane')
    expect(weatherOf(-1, [-10, -5, 0, 5])).toBe('cloudy')
  })

  it('names every level with its bounds in the unit', () => {
    expect(weatherScale(th, 'ops/s')).toBe(
      'sunny below 100 ops/s; partly cloudy from 100 ops/s; cloudy from 200 ops/s; stormy from 300 ops/s; hurricane from 400 ops/s',
    )
  })
})

describe('sparkline', () => {
  it('pairs timestamps with values, zeroing gaps', () => {
    expect(sparkPoints([1, 2, 3], [5, 6])).toEqual([{ ts: 1, value: 5 }, { ts: 2, value: 6 }])
    expect(sparkPoints(tile.timestamps, tile.values).map((p) => p.value)).toEqual([10, 20, 0, 12])
  })

  it('formats the tile value in its unit, with its weather, and leaves out the filling last step', () => {
    const v = tileView(tile)
    expect(v.value).toBe('12.3 MB/s')
    expect(v.weather).toBe('partly cloudy')
    expect(v.points.map((p) => p.ts)).toEqual([100, 110, 120])
    expect(v.span).toBe('last 30 s')
    expect(tileView({ ...tile, unit: '%', value: 41.66 }).value).toBe('41.7 %')
    expect(tileView({ ...tile, level: 41.66 }).weather).toBe('hurricane')
    expect(tileView({ ...tile, timestamps: [5], values: [1] }).points).toEqual([{ ts: 5, value: 1 }])
  })

  it('judges the weather on the trailing mean, not on the newest second, and says so', () => {
    // a burst in the newest second shows as the value; the weather follows the mean
    const v = tileView({ ...tile, value: 45, level: 15.5 })
    expect([v.value, v.weather]).toEqual(['45 MB/s', 'partly cloudy'])
    expect(v.level).toBe('mean of the last 10 s: 15.5 MB/s')
    expect(tileView({ ...tile, value: 5, level: 35 }).weather).toBe('stormy')
  })

  it('says what span the sparkline covers: a week of hours, or the minutes a new store has', () => {
    const week = Array.from({ length: 169 }, (_, i) => 1_800_000_000 + i * 3600)
    expect(tileView({ ...tile, timestamps: week, values: week.map(() => 1), step: 3600 }).span).toBe('last 7 days')
    const young = Array.from({ length: 61 }, (_, i) => 1_800_000_000 + i * 5)
    expect(tileView({ ...tile, timestamps: young, values: young.map(() => 1), step: 5 }).span).toBe('last 5 min')
    expect(spanText(6 * 3600)).toBe('last 6 h')
    expect(spanText(2 * 86400)).toBe('last 2 days')
  })

  it('shows a tile that cannot be read without a value or weather', () => {
    const v = tileView({ ...tile, error: "unknown metric 'x'", timestamps: [], values: [] })
    expect([v.value, v.weather, v.error]).toEqual(['–', null, "unknown metric 'x'"])
  })

  it('draws a bare line in milliseconds with headroom', () => {
    const opt = toSparklineOption(sparkPoints([100, 101], [1, 4]))
    const s = (opt.series as { data: number[][] }[])[0]!
    expect(s.data).toEqual([[100_000, 1], [101_000, 4]])
    expect((opt.yAxis as { max: number }).max).toBeCloseTo(4.4)
    expect((opt.yAxis as { max: number }).max).toBeGreaterThan(4)
  })
})
