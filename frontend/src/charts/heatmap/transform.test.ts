import { describe, expect, it } from 'vitest'
import type { HeatmapResult } from '../../api/client'
import { ANNOTATION_KEY } from '../annotations/transform'
import {
  bandBetween,
  bandLabel,
  bandRate,
  bandRows,
  bucketAxisLabel,
  bucketPosition,
  bucketRates,
  cellAtPoint,
  cellData,
  cellsRange,
  cellTip,
  cropOutliers,
  heatmapCsv,
  mergeTail,
  nextCrop,
  colorRange,
  onSharedScales,
  parseColor,
  plotRect,
  rasterGrid,
  rasterPixels,
  scaleColor,
  spanBetween,
  spanColumns,
  steadyRange,
  HEAT_GRID,
  toHeatmapOption,
  zoomBuckets,
  zoomLabel,
} from './transform'

const bucket = (index: number, lo: number, hi: number | null, label: string) => ({ index, lo, hi, label })

function heatmap(over: Partial<HeatmapResult> = {}): HeatmapResult {
  return {
    statistic: { metric: 'nfs.ops', by: 'latency', where: {}, name: 'NFS operations per second broken down by latency', unit: 'ops/s' },
    dim: 'latency',
    tier: 'second',
    step: 1,
    start: 100,
    end: 103,
    timestamps: [100, 101, 102],
    buckets: [
      bucket(10, 0, 2048, '< 2.05 µs'),
      bucket(11, 2048, 4096, '2.05 µs – 4.1 µs'),
      bucket(20, 1048576, 2097152, '1.05 ms – 2.1 ms'),
    ],
    cells: [
      [0, 0, 100],
      [0, 2, 1],
      [1, 1, 1000],
      [2, 0, 10],
      [2, 2, 0],
    ],
    max: 1000,
    total: [101, 1000, 10],
    ...over,
  }
}

describe('bucket labels', () => {
  it('read as the lower bound in the histogram unit', () => {
    expect(bucketAxisLabel({ index: 20, lo: 1048576 }, 'ns')).toBe('1.05 ms')
    expect(bucketAxisLabel({ index: 13, lo: 8192 }, 'bytes')).toBe('8 KiB')
    expect(bucketAxisLabel({ index: 10, lo: 0 }, 'ns')).toBe('0')
  })
})

describe('cellData', () => {
  it('turns sparse cells into [x, y, log10 v, v] and drops empty ones', () => {
    expect(cellData(heatmap().cells)).toEqual([
      [0, 0, 2, 100],
      [0, 2, 0, 1],
      [1, 1, 3, 1000],
      [2, 0, 1, 10],
    ])
  })
  it('gives the colour scale log bounds', () => {
    expect(colorRange(cellData(heatmap().cells))).toEqual({ min: 0, max: 3 })
    expect(colorRange([])).toEqual({ min: 0, max: 1 })
    expect(colorRange([[0, 0, 2, 100]])).toEqual({ min: 1, max: 2 })
  })
})

describe('toHeatmapOption', () => {
  it('marks a run over the time columns it covers, beside the band selection', () => {
    const opt = toHeatmapOption(heatmap(), {
      valueUnit: 'ns', rateUnit: 'ops/s', selection: { lo: 11, hi: 20 }, annotations: [{ label: 'r1', from: 101, to: 103 }],
    })
    const series = opt.series as { id?: string; data: unknown[]; markArea?: { data: unknown[][] } }[]
    expect(series).toHaveLength(2)
    expect(series[0]!.markArea!.data).toHaveLength(1) // the selected band stays on the cells' series
    expect(series[1]!.id).toBe(ANNOTATION_KEY)
    expect(series[1]!.markArea!.data).toEqual([[{ name: 'r1', xAxis: 0.5 }, { xAxis: 2.5 }]])
    expect((toHeatmapOption(heatmap(), { valueUnit: 'ns', rateUnit: 'ops/s', selection: null, annotations: [{ label: 'x', from: 0, to: 50 }] })
      .series as unknown[]).length).toBe(1)
  })

  it('draws time x bucket categories with a log colour scale', () => {
    const opt = toHeatmapOption(heatmap(), { valueUnit: 'ns', rateUnit: 'ops/s', selection: null })
    const y = opt.yAxis as { type: string; data: string[] }
    expect(y.type).toBe('category')
    expect(y.data).toEqual(['0', '2.05 µs', '1.05 ms'])
    expect((opt.xAxis as { data: string[] }).data).toHaveLength(3)
    const vm = opt.visualMap as { min: number; max: number; dimension: number; text: string[] }
    expect([vm.dimension, vm.min, vm.max]).toEqual([2, 0, 3])
    expect(vm.text).toEqual(['1,000 ops/s', '1 ops/s'])
    const series = (opt.series as { data: unknown[]; markArea?: unknown }[])[0]!
    expect(series.data).toHaveLength(4)
    expect(series.markArea).toBeUndefined()
  })
  it('marks the selected band', () => {
    const opt = toHeatmapOption(heatmap(), { valueUnit: 'ns', rateUnit: 'ops/s', selection: { lo: 11, hi: 20 } })
    const series = (opt.series as { markArea?: { data: unknown } }[])[0]!
    expect(series.markArea?.data).toEqual([[{ yAxis: 0.5 }, { yAxis: 2.5 }]])
  })
})

describe('onSharedScales', () => {
  it('puts heat maps side by side on the union of their buckets and one colour scale', () => {
    const a = heatmap()
    const b = heatmap({
      buckets: [bucket(11, 2048, 4096, '2.05 µs – 4.1 µs'), bucket(24, 16777216, 33554432, '16.8 ms – 33.6 ms')],
      cells: [
        [0, 1, 50000],
        [1, 0, 3],
      ],
    })
    const { results, colors } = onSharedScales([a, b])
    expect(results.map((r) => r.buckets.map((x) => x.index))).toEqual([
      [10, 11, 20, 24],
      [10, 11, 20, 24],
    ])
    // every cell keeps its bucket: a's 1.05 ms cell on row 2, b's 16.8 ms cell on row 3
    const bucketsOf = (r: HeatmapResult) => r.cells.map(([t, row, v]) => [t, r.buckets[row!]!.index, v])
    expect(bucketsOf(results[0]!)).toEqual(bucketsOf(a))
    expect(bucketsOf(results[1]!)).toEqual([
      [0, 24, 50000],
      [1, 11, 3],
    ])
    expect(colors).toEqual({ min: 0, max: Math.log10(50000) })
    expect(toHeatmapOption(results[0]!, { valueUnit: 'ns', rateUnit: 'ops/s', selection: null, colors }).visualMap).toMatchObject({
      min: 0,
      max: Math.log10(50000),
    })
  })
})

describe('bucket rates and bands', () => {
  it('average each bucket over the range, top bucket first', () => {
    const rates = bucketRates(heatmap())
    expect(rates.map((r) => r.index)).toEqual([20, 11, 10])
    expect(rates.map((r) => r.rate)).toEqual([1 / 3, 1000 / 3, 110 / 3])
    expect(rates.reduce((s, r) => s + r.share, 0)).toBeCloseTo(1)
    expect(bandRate(rates, { lo: 10, hi: 11 })).toBeCloseTo(370)
  })
  it('span two buckets in either order and read as a range', () => {
    expect(bandBetween(20, 11)).toEqual({ lo: 11, hi: 20 })
    const b = heatmap().buckets
    expect(bandLabel(b, { lo: 11, hi: 20 }, 'ns')).toBe('2.05 µs – 2.1 ms')
    expect(bandLabel(b, { lo: 10, hi: 11 }, 'ns')).toBe('0 – 4.1 µs')
    expect(bandLabel(b, { lo: 20, hi: 20 }, 'ns')).toBe('1.05 ms – 2.1 ms')
    expect(bandLabel(b, { lo: 5, hi: 20 }, 'ns')).toBe('')
    expect(bucketPosition(heatmap(), 20)).toBe(2)
  })
})

describe('cropOutliers', () => {
  const buckets = [10, 11, 12, 13].map((i) => ({ index: i, lo: 2 ** i, hi: 2 ** (i + 1), label: `b${i}` }))
  // two columns; per column 900 + 90 + 9 + 1 = 1000 events: 0.1 % are in b13, 1 % in b12..b13
  const r = { buckets, timestamps: [0, 1], cells: [0, 1].flatMap((t) => [[t, 0, 900], [t, 1, 90], [t, 2, 9], [t, 3, 1]]) }
  it.each([
    [0.1, 3, 1, 'b13'],
    [1, 2, 10, 'b12'],
    [5, 2, 10, 'b12'], // b11 holds 9 %: more than 5 %, so it stays
    [10, 1, 100, 'b11'],
  ])('crops the top %s percent to %s buckets, hiding %s events/s from %s up', (pct, kept, hidden, above) => {
    const c = cropOutliers(r, pct)
    expect(c.result.buckets.map((b) => b.label)).toEqual(buckets.slice(0, kept).map((b) => b.label))
    expect(c.result.cells.every(([, b]) => b! < kept)).toBe(true)
    expect(c.hidden).toBeCloseTo(hidden)
    expect(c.above?.label).toBe(above)
  })
  it('crops nothing at 0 %, or when the top bucket alone is more than asked', () => {
    expect(cropOutliers(r, 0)).toEqual({ result: r, hidden: 0, above: null })
    const heavyTop = { ...r, cells: [[0, 0, 10], [0, 3, 90]] }
    expect(cropOutliers(heavyTop, 5).above).toBeNull()
  })
  it('cycles off, 0.1 %, 1 %, 5 %', () => {
    expect([nextCrop(0), nextCrop(0.1), nextCrop(1), nextCrop(5)]).toEqual([0.1, 1, 5, 0])
  })
})

describe('heatmapCsv', () => {
  it('writes a row per cell with events, in time then bucket order', () => {
    const buckets = [{ index: 10, lo: 1024, hi: 2048, label: '1.02 µs – 2.05 µs' }, { index: 11, lo: 2048, hi: null, label: '≥ 2.05 µs' }]
    const csv = heatmapCsv({ dim: 'latency', buckets, timestamps: [100, 101], cells: [[1, 0, 3], [0, 1, 2], [0, 0, 5], [1, 1, 0]] }, 'ops/s')
    expect(csv.trimEnd().split('\r\n')).toEqual([
      'time,unix,latency,latency_from,latency_to,ops/s',
      '1970-01-01T00:01:40.000Z,100,1.02 µs – 2.05 µs,1024,2048,5',
      '1970-01-01T00:01:40.000Z,100,≥ 2.05 µs,2048,,2',
      '1970-01-01T00:01:41.000Z,101,1.02 µs – 2.05 µs,1024,2048,3',
    ])
  })
})

describe('zoomBuckets', () => {
  const buckets = [10, 11, 12, 13, 14].map((i) => ({ index: i, lo: i === 10 ? 0 : 2 ** i, hi: i === 14 ? null : 2 ** (i + 1), label: `b${i}` }))
  // two columns; per column b10..b14 hold 1, 10, 100, 1000, 10000 events
  const r = { buckets, timestamps: [0, 1], cells: [0, 1].flatMap((t) => [0, 1, 2, 3, 4].map((b) => [t, b, 10 ** b])) }
  it.each([
    ['no zoom', null, ['b10', 'b11', 'b12', 'b13', 'b14'], 0],
    ['the middle', { lo: 11, hi: 12 }, ['b11', 'b12'], 1 + 1000 + 10000],
    ['one bucket', { lo: 13, hi: 13 }, ['b13'], 1 + 10 + 100 + 10000],
    ['past the lowest bucket', { lo: 2, hi: 11 }, ['b10', 'b11'], 100 + 1000 + 10000],
    ['past the highest bucket', { lo: 14, hi: 40 }, ['b14'], 1111],
    ['every bucket and more', { lo: 0, hi: 63 }, ['b10', 'b11', 'b12', 'b13', 'b14'], 0],
    ['no bucket of it', { lo: 20, hi: 22 }, [], 11111],
  ])('%s: draws %j and hides a mean %s events/s', (_, zoom, rows, hidden) => {
    const z = zoomBuckets(r, zoom)
    expect(z.result.buckets.map((b) => b.label)).toEqual(rows)
    expect(z.hidden).toBeCloseTo(hidden)
    // each cell kept is on its own bucket's row, with its value
    const shown = z.result.cells.map(([t, y, v]) => [t, z.result.buckets[y!]!.index, v])
    expect(shown).toEqual(r.cells.filter(([, b]) => rows.includes(`b${buckets[b!]!.index}`)).map(([t, b, v]) => [t, buckets[b!]!.index, v]))
  })
  it('leaves the heat map as it is when nothing is zoomed out', () => {
    expect(zoomBuckets(r, null).result).toBe(r)
    expect(zoomBuckets(r, { lo: 10, hi: 14 }).result).toBe(r)
  })
  it('after a crop, counts what the crop hid once: shown + cropped + zoomed out = all', () => {
    // b14 now holds 1 event of 1112 per column: the 1 % crop hides it
    const light = { ...r, cells: r.cells.map(([t, b, v]) => [t!, b!, b === 4 ? 1 : v!]) }
    const c = cropOutliers(light, 1)
    expect(c.above?.label).toBe('b14')
    const z = zoomBuckets(c.result, { lo: 12, hi: 20 })
    expect(z.result.buckets.map((b) => b.label)).toEqual(['b12', 'b13'])
    expect(z.hidden).toBeCloseTo(11) // b10 and b11; b14 is the crop's
    const shown = bucketRates(z.result).reduce((s, b) => s + b.rate, 0)
    expect([shown, c.hidden, z.hidden].reduce((a, b) => a + b)).toBeCloseTo(1112)
  })
  it.each([
    [{ lo: 11, hi: 12 }, '2.05 µs – 8.19 µs'],
    [{ lo: 10, hi: 10 }, 'b10'],
    [{ lo: 13, hi: 14 }, '8.19 µs – ∞'],
    [{ lo: 20, hi: 22 }, '1.05 ms – 8.39 ms'], // buckets not in the heat map: from their exponents
  ])('reads the zoom %j as %s', (zoom, label) => {
    expect(zoomLabel(buckets, zoom, 'ns')).toBe(label)
  })
})

describe('bandRows', () => {
  const r = heatmap() // rows: b10, b11, b20
  it.each([
    [{ lo: 11, hi: 20 }, [1, 2]],
    [{ lo: 10, hi: 10 }, [0, 0]],
    [{ lo: 5, hi: 11 }, [0, 1]], // reaches below the drawn rows: the part drawn
    [{ lo: 12, hi: 19 }, null], // between rows: no bucket of it drawn
    [{ lo: 21, hi: 30 }, null],
  ])('marks the band %j over rows %j', (band, rows) => {
    expect(bandRows(r, band)).toEqual(rows)
  })
  it('marks a band reaching past a zoom over what is drawn of it', () => {
    const zoomed = zoomBuckets(r, { lo: 11, hi: 11 }).result
    const area = (toHeatmapOption(zoomed, { valueUnit: 'ns', rateUnit: 'ops/s', selection: { lo: 10, hi: 20 } }).series as { markArea?: { data: unknown } }[])[0]!
    expect(area.markArea?.data).toEqual([[{ yAxis: -0.5 }, { yAxis: 0.5 }]])
    const outside = toHeatmapOption(zoomed, { valueUnit: 'ns', rateUnit: 'ops/s', selection: { lo: 20, hi: 20 } }).series as { markArea?: unknown }[]
    expect(outside[0]!.markArea).toBeUndefined()
    expect((toHeatmapOption(zoomed, { valueUnit: 'ns', rateUnit: 'ops/s', selection: null }).yAxis as { data: string[] }).data).toEqual(['2.05 µs'])
  })
})

describe('mergeTail', () => {
  // a base of columns 100, 110, 120 (step 10, three columns) and a tail read from its last column on
  const b0 = bucket(10, 0, 2048, '< 2.05 µs')
  const b1 = bucket(11, 2048, 4096, '2.05 µs – 4.1 µs')
  const b2 = bucket(20, 1048576, 2097152, '1.05 ms – 2.1 ms')
  const base = heatmap({
    step: 10, start: 100, end: 130, timestamps: [100, 110, 120], buckets: [b0, b1],
    cells: [[0, 0, 1], [1, 1, 2], [2, 0, 3]], total: [1, 2, 3], max: 3,
  })
  const tail = (over: Partial<HeatmapResult>) =>
    heatmap({ step: 10, start: 120, end: 140, timestamps: [120, 130], buckets: [b0, b2], cells: [[0, 0, 5], [1, 1, 7]], total: [5, 7], max: 7, ...over })

  it('replaces the columns the tail covers, adds the newer, and drops as many of the oldest', () => {
    const m = mergeTail(base, tail({}))
    expect([m.start, m.end, m.timestamps]).toEqual([110, 140, [110, 120, 130]])
    expect(m.buckets.map((b) => b.index)).toEqual([10, 11, 20])
    // column 110 keeps its base cell (bucket 11); 120 is the tail's (5 in bucket 10, not the base's 3); 130 is new
    expect(m.cells).toEqual([[0, 1, 2], [1, 0, 5], [2, 2, 7]])
    expect([m.total, m.max]).toEqual([[2, 5, 7], 7])
  })

  it('grows the newest column in place while the tail stays within it', () => {
    const m = mergeTail(base, tail({ start: 120, end: 130, timestamps: [120], buckets: [b0], cells: [[0, 0, 4]], total: [4], max: 4 }))
    expect([m.start, m.end, m.timestamps]).toEqual([100, 130, [100, 110, 120]])
    expect(m.cells).toEqual([[0, 0, 1], [1, 1, 2], [2, 0, 4]])
    expect([m.total, m.max]).toEqual([[1, 2, 4], 4])
  })

  it.each([
    ['no tail', null],
    ['another step', tail({ step: 60 })],
    ['another dimension', tail({ dim: 'size' })],
    ['a tail past the end (a gap: wait for the next full read)', tail({ start: 140, end: 160, timestamps: [140, 150] })],
    ['a tail before the start', tail({ start: 90, end: 140, timestamps: [90, 100, 110, 120, 130] })],
    ['an empty tail', tail({ timestamps: [], cells: [] })],
    ['an older tail (a late answer)', tail({ start: 110, end: 120, timestamps: [110], cells: [[0, 0, 9]] })],
  ])('leaves the base as it is with %s', (_, t) => expect(mergeTail(base, t)).toBe(base))
})

describe('the raster of cells', () => {
  it('puts each cell at column * rows + row with its rate, and its level along the colour key', () => {
    const r = heatmap()
    const g = rasterGrid(r)
    expect([g.cols, g.rows]).toEqual([3, 3])
    // cells [0,0,100] [0,2,1] [1,1,1000] [2,0,10] [2,2,0]: log10 1 .. 3 spans the key
    expect([...g.rate].map((v) => (Number.isNaN(v) ? null : v))).toEqual([100, null, 1, null, 1000, null, 10, null, null])
    expect([...g.level]).toEqual([2 / 3, -1, 0, -1, 1, -1, 1 / 3, -1, -1].map((v) => Math.fround(v)))
    // as the colour key (the option's visualMap) maps the same cells
    const vm = toHeatmapOption(r, { valueUnit: 'ns', rateUnit: 'ops/s', selection: null, raster: true }).visualMap as { min: number; max: number }
    expect([vm.min, vm.max]).toEqual([0, 3])
    expect(cellsRange(r.cells)).toEqual(colorRange(cellData(r.cells)))
  })

  it('leaves the cells out of the option when a raster draws them, and keeps the rest', () => {
    const r = heatmap()
    const drawn = toHeatmapOption(r, { valueUnit: 'ns', rateUnit: 'ops/s', selection: { lo: 10, hi: 11 }, raster: true })
    const own = toHeatmapOption(r, { valueUnit: 'ns', rateUnit: 'ops/s', selection: { lo: 10, hi: 11 } })
    const series = (o: typeof drawn) => (o.series as { data: unknown[]; markArea?: unknown }[])[0]!
    expect(series(drawn).data).toEqual([])
    expect(series(own).data).toHaveLength(4)
    expect(series(drawn).markArea).toEqual(series(own).markArea)
    expect(drawn.grid).toEqual(HEAT_GRID)
  })

  it('shares one colour scale when given one', () => {
    const g = rasterGrid(heatmap(), { min: 0, max: 4 })
    expect(g.level[4]).toBe(0.75)
  })

  it.each([
    ['#fff', [255, 255, 255]],
    ['#1a2B3c', [26, 43, 60]],
    ['rgb(1, 2, 3)', [1, 2, 3]],
    ['rgba(10,20,30,0.5)', [10, 20, 30]],
    [' rgb(4 5 6) ', [4, 5, 6]],
    ['var(--x)', null],
    ['', null],
  ])('reads the colour %s', (css, rgb) => expect(parseColor(css)).toEqual(rgb))

  it('blends between the scale stops as the colour key does', () => {
    const stops: [number, number, number][] = [[0, 0, 0], [100, 200, 255], [200, 0, 0]]
    expect(scaleColor(stops, 0)).toEqual([0, 0, 0])
    expect(scaleColor(stops, 0.25)).toEqual([50, 100, 128])
    expect(scaleColor(stops, 0.5)).toEqual([100, 200, 255])
    expect(scaleColor(stops, 1)).toEqual([200, 0, 0])
    expect(scaleColor(stops, 7)).toEqual([200, 0, 0])
  })

  it('finds the cell under a point, the lowest bucket at the bottom, and none off the plot', () => {
    // a plot of 100 x 40 px inside the margins: 4 columns of 25 px, 2 rows of 20 px
    const [w, h] = [HEAT_GRID.left + HEAT_GRID.right + 100, HEAT_GRID.top + HEAT_GRID.bottom + 40]
    const at = (x: number, y: number) => cellAtPoint(w, h, 4, 2, HEAT_GRID.left + x, HEAT_GRID.top + y)
    expect(at(0, 0)).toEqual({ col: 0, row: 1 })
    expect(at(99, 39)).toEqual({ col: 3, row: 0 })
    expect(at(30, 25)).toEqual({ col: 1, row: 0 })
    expect([at(-1, 5), at(100, 5), at(5, -1), at(5, 40)]).toEqual([null, null, null, null])
    // the plot the raster is scaled to is the same rectangle
    expect(plotRect(w, h)).toEqual([HEAT_GRID.left, HEAT_GRID.top, 100, 40])
  })

  it('paints one pixel per cell, the lowest bucket at the bottom, empty cells clear', () => {
    // 2 columns x 3 rows: levels 0, 0.5 and 1 in column 0 (rows 0..2), only row 1 filled in column 1
    const g = { cols: 2, rows: 3, rate: new Float64Array(6), level: Float32Array.from([0, 0.5, 1, -1, 1, -1]) }
    const px = rasterPixels(g, [[0, 0, 0], [200, 100, 50]], 3)
    const at = (x: number, y: number) => [...px.slice((y * 2 + x) * 4, (y * 2 + x) * 4 + 4)]
    expect(at(0, 2)).toEqual([0, 0, 0, 255]) // column 0, row 0 (bottom): level 0
    expect(at(0, 1)).toEqual([100, 50, 25, 255]) // row 1: half way
    expect(at(0, 0)).toEqual([200, 100, 50, 255]) // row 2 (top): level 1
    expect([at(1, 0), at(1, 1), at(1, 2)]).toEqual([[0, 0, 0, 0], [200, 100, 50, 255], [0, 0, 0, 0]])
  })

  it('says what a cell is in its tooltip', () => {
    expect(cellTip(heatmap(), 1, 1, 1000, 'ops/s')).toEqual([expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/), 'latency 2.05 µs – 4.1 µs', '1,000 ops/s'])
  })
})

describe('a time span of columns', () => {
  // columns 100, 110, 120 at step 10
  const r = { timestamps: [100, 110, 120], step: 10 }
  it.each([
    [{ start: 100, end: 130 }, [0, 2]],
    [{ start: 110, end: 120 }, [1, 1]],
    [{ start: 105, end: 115 }, [0, 1]],
    [{ start: 125, end: 200 }, [2, 2]],
    [{ start: 130, end: 200 }, null],
    [{ start: 0, end: 100 }, null],
  ])('%j covers columns %j', (span, cols) => expect(spanColumns(r, span)).toEqual(cols))

  it('runs from the first column dragged to the end of the last, in either order', () => {
    expect(spanBetween(r, 2, 1)).toEqual({ start: 110, end: 130 })
    expect(spanBetween(r, 0, 0)).toEqual({ start: 100, end: 110 })
    expect(spanBetween(r, 0, 7)).toBe(null)
  })

  it('narrows the selected band to its columns on the chart', () => {
    const o = toHeatmapOption(heatmap(), { valueUnit: 'ns', rateUnit: 'ops/s', selection: { lo: 11, hi: 20 }, span: { start: 101, end: 103 }, raster: true })
    const area = (o.series as { markArea: { data: unknown[][] } }[])[0]!.markArea.data[0]
    expect(area).toEqual([{ yAxis: 0.5, xAxis: 0.5 }, { yAxis: 2.5, xAxis: 2.5 }])
  })
})

describe('steadyRange', () => {
  it.each([
    [{ min: 0, max: 3 }, { min: 0, max: 3 }],
    [{ min: 0.1, max: 2.9 }, { min: 0, max: 3 }],
    [{ min: 1.3, max: 3.26 }, { min: 1.25, max: 3.5 }],
    [{ min: -0.3, max: 0.2 }, { min: -0.5, max: 0.25 }],
  ])('widens %j to %j, whole quarters of a decade', (r, want) => expect(steadyRange(r)).toEqual(want))
})
