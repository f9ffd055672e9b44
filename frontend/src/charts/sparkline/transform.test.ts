import { describe, expect, it } from 'vitest'
import type { StatusTile } from '../../api/client'
import { sparkPoints, tileView, toSparklineOption } from './transform'

const tile: StatusTile = {
  id: 'net_in',
  title: 'Network in',
  unit: 'MB/s',
  metric: 'net.bytes',
  where: { direction: ['in'] },
  by: 'interface',
  value: 12.34,
  timestamps: [100, 110, 120, 130],
  values: [10, 20, Number.NaN, 12],
}

describe('sparkline', () => {
  it('pairs timestamps with values, zeroing gaps', () => {
    expect(sparkPoints([1, 2, 3], [5, 6])).toEqual([{ ts: 1, value: 5 }, { ts: 2, value: 6 }])
    expect(sparkPoints(tile.timestamps, tile.values).map((p) => p.value)).toEqual([10, 20, 0, 12])
  })

  it('formats the tile value in its unit and leaves out the filling last step', () => {
    const v = tileView(tile)
    expect(v.value).toBe('12.3 MB/s')
    expect(v.points.map((p) => p.ts)).toEqual([100, 110, 120])
    expect(tileView({ ...tile, unit: '%', value: 41.66 }).value).toBe('41.7 %')
    expect(tileView({ ...tile, timestamps: [5], values: [1] }).points).toEqual([{ ts: 5, value: 1 }])
  })

  it('draws a bare line in milliseconds with headroom', () => {
    const opt = toSparklineOption(sparkPoints([100, 101], [1, 4]))
    const s = (opt.series as { data: number[][] }[])[0]!
    expect(s.data).toEqual([[100_000, 1], [101_000, 4]])
    expect((opt.yAxis as { max: number }).max).toBeCloseTo(4.4)
    expect((opt.yAxis as { max: number }).max).toBeGreaterThan(4)
  })
})
