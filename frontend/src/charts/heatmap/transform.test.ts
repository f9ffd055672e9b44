import { describe, expect, it } from 'vitest'
import type { HeatmapResult } from '../../api/client'
import { ANNOTATION_KEY } from '../annotations/transform'
import {
  bandBetween,
  bandLabel,
  bandRate,
  bandRect,
  bandRows,
  bucketAxisLabel,
  bucketPosition,
  bucketRates,
  cellAtPoint,
  cellData,
  cellsRange,
  cellTip,
  columnSum,
  cropRows,
  dirtyColumns,
  gridOf,
  gridRange,
  heatmapCsv,
  mergeTailInto,
  nextCrop,
  colorRange,
  onSharedScales,
  paintColumns,
  paletteOf,
  parseColor,
  plotRect,
  rowSums,
  scaleColor,
  spanBetween,
  spanColumns,
  steadyRange,
  HEAT_GRID,
  timeTicks,
  toHeatmapOption,
  zoomLabel,
  zoomRows,
} from './transform'
import type { HeatGrid } from './model'

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

/** A grid's cells as [column, bucket exponent, rate], column by column. */
function cellsOf(g: HeatGrid): number[][] {
  const out: number[][] = []
  for (let col = 0; col < g.cols; col++) for (let row = 0; row < g.rows; row++) if (g.rate[col * g.rows + row]! > 0) out.push([col, g.buckets[row]!.index, g.rate[col * g.rows + row]!])
  return out
}

/** A grid of `cols` columns from 0 at step 1, on `buckets`, from sparse [column, row, rate] cells. */
function gridFrom(buckets: HeatmapResult['buckets'], cols: number, cells: number[][]): HeatGrid {
  return gridOf({ dim: 'latency', step: 1, start: 0, end: cols, timestamps: Array.from({ length: cols }, (_, i) => i), buckets, cells })
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
    const g = gridOf(heatmap())
    const rates = bucketRates(g.buckets, rowSums(g), g.cols)
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

describe('cropRows', () => {
  const buckets = [10, 11, 12, 13].map((i) => ({ index: i, lo: 2 ** i, hi: 2 ** (i + 1), label: `b${i}` }))
  // two columns; per column 900 + 90 + 9 + 1 = 1000 events: 0.1 % are in b13, 1 % in b12..b13
  const g = gridFrom(buckets, 2, [0, 1].flatMap((t) => [[t, 0, 900], [t, 1, 90], [t, 2, 9], [t, 3, 1]]))
  it.each([
    [0.1, 3, 1, 'b13'],
    [1, 2, 10, 'b12'],
    [5, 2, 10, 'b12'], // b11 holds 9 %: more than 5 %, so it stays
    [10, 1, 100, 'b11'],
  ])('crops the top %s percent to %s buckets, hiding %s events/s from %s up', (pct, kept, hidden, above) => {
    const c = cropRows(g.buckets, rowSums(g), g.cols, pct)
    expect(c.keep).toBe(kept)
    expect(c.hidden).toBeCloseTo(hidden)
    expect(c.above?.label).toBe(above)
  })
  it('crops nothing at 0 %, or when the top bucket alone is more than asked', () => {
    expect(cropRows(g.buckets, rowSums(g), g.cols, 0)).toEqual({ keep: 4, hidden: 0, above: null })
    const heavyTop = gridFrom(buckets, 2, [[0, 0, 10], [0, 3, 90]])
    expect(cropRows(heavyTop.buckets, rowSums(heavyTop), 2, 5).above).toBeNull()
  })
  it('cycles off, 0.1 %, 1 %, 5 %', () => {
    expect([nextCrop(0), nextCrop(0.1), nextCrop(1), nextCrop(5)]).toEqual([0.1, 1, 5, 0])
  })
})

describe('heatmapCsv', () => {
  it('writes a row per cell with events, in time then bucket order', () => {
    const buckets = [{ index: 10, lo: 1024, hi: 2048, label: '1.02 µs – 2.05 µs' }, { index: 11, lo: 2048, hi: null, label: '≥ 2.05 µs' }]
    // the API's buckets out of order: the grid puts them in order
    const g = gridOf({ dim: 'latency', step: 1, start: 100, end: 102, timestamps: [100, 101], buckets: [buckets[1]!, buckets[0]!], cells: [[1, 1, 3], [0, 0, 2], [0, 1, 5], [1, 0, 0]] })
    const csv = heatmapCsv(g, 'ops/s')
    expect(csv.trimEnd().split('\r\n')).toEqual([
      'time,unix,latency,latency_from,latency_to,ops/s',
      '1970-01-01T00:01:40.000Z,100,1.02 µs – 2.05 µs,1024,2048,5',
      '1970-01-01T00:01:40.000Z,100,≥ 2.05 µs,2048,,2',
      '1970-01-01T00:01:41.000Z,101,1.02 µs – 2.05 µs,1024,2048,3',
    ])
  })
})

describe('zoomRows', () => {
  const buckets = [10, 11, 12, 13, 14].map((i) => ({ index: i, lo: i === 10 ? 0 : 2 ** i, hi: i === 14 ? null : 2 ** (i + 1), label: `b${i}` }))
  // two columns; per column b10..b14 hold 1, 10, 100, 1000, 10000 events
  const g = gridFrom(buckets, 2, [0, 1].flatMap((t) => [0, 1, 2, 3, 4].map((b) => [t, b, 10 ** b])))
  const sums = rowSums(g)
  it.each([
    ['no zoom', null, ['b10', 'b11', 'b12', 'b13', 'b14'], 0],
    ['the middle', { lo: 11, hi: 12 }, ['b11', 'b12'], 1 + 1000 + 10000],
    ['one bucket', { lo: 13, hi: 13 }, ['b13'], 1 + 10 + 100 + 10000],
    ['past the lowest bucket', { lo: 2, hi: 11 }, ['b10', 'b11'], 100 + 1000 + 10000],
    ['past the highest bucket', { lo: 14, hi: 40 }, ['b14'], 1111],
    ['every bucket and more', { lo: 0, hi: 63 }, ['b10', 'b11', 'b12', 'b13', 'b14'], 0],
    ['no bucket of it', { lo: 20, hi: 22 }, [], 11111],
  ])('%s: draws %j and hides a mean %s events/s', (_, zoom, rows, hidden) => {
    const z = zoomRows(g.buckets, g.rows, sums, g.cols, zoom)
    expect(g.buckets.slice(z.lo, z.hi).map((b) => b.label)).toEqual(rows)
    expect(z.hidden).toBeCloseTo(hidden)
  })
  it('leaves every row the crop kept when nothing is zoomed out', () => {
    expect(zoomRows(g.buckets, 5, sums, g.cols, null)).toEqual({ lo: 0, hi: 5, hidden: 0 })
    expect(zoomRows(g.buckets, 5, sums, g.cols, { lo: 10, hi: 14 })).toEqual({ lo: 0, hi: 5, hidden: 0 })
    expect(zoomRows(g.buckets, 3, sums, g.cols, { lo: 10, hi: 14 })).toEqual({ lo: 0, hi: 3, hidden: 0 })
  })
  it('after a crop, counts what the crop hid once: shown + cropped + zoomed out = all', () => {
    // b14 now holds 1 event of 1112 per column: the 1 % crop hides it
    const light = gridFrom(buckets, 2, [0, 1].flatMap((t) => [0, 1, 2, 3, 4].map((b) => [t, b, b === 4 ? 1 : 10 ** b])))
    const lightSums = rowSums(light)
    const c = cropRows(light.buckets, lightSums, light.cols, 1)
    expect(c.above?.label).toBe('b14')
    const z = zoomRows(light.buckets, c.keep, lightSums, light.cols, { lo: 12, hi: 20 })
    expect(light.buckets.slice(z.lo, z.hi).map((b) => b.label)).toEqual(['b12', 'b13'])
    expect(z.hidden).toBeCloseTo(11) // b10 and b11; b14 is the crop's
    const shown = bucketRates(light.buckets.slice(z.lo, z.hi), lightSums.subarray(z.lo, z.hi), light.cols).reduce((s, b) => s + b.rate, 0)
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
    const g = gridOf(r)
    const z = zoomRows(g.buckets, g.rows, rowSums(g), g.cols, { lo: 11, hi: 11 })
    const zoomed = { ...r, buckets: g.buckets.slice(z.lo, z.hi) }
    const area = (toHeatmapOption(zoomed, { valueUnit: 'ns', rateUnit: 'ops/s', selection: { lo: 10, hi: 20 } }).series as { markArea?: { data: unknown } }[])[0]!
    expect(area.markArea?.data).toEqual([[{ yAxis: -0.5 }, { yAxis: 0.5 }]])
    const outside = toHeatmapOption(zoomed, { valueUnit: 'ns', rateUnit: 'ops/s', selection: { lo: 20, hi: 20 } }).series as { markArea?: unknown }[]
    expect(outside[0]!.markArea).toBeUndefined()
    expect((toHeatmapOption(zoomed, { valueUnit: 'ns', rateUnit: 'ops/s', selection: null }).yAxis as { data: string[] }).data).toEqual(['2.05 µs'])
  })
})

describe('gridOf', () => {
  it('puts each cell at column * rows + row with its rate, its buckets in order, empty cells 0', () => {
    const [b10, b11, b20] = heatmap().buckets
    // the buckets out of order, a zero rate and a cell of a bucket the map does not have
    const g = gridOf(heatmap({ buckets: [b20!, b10!, b11!], cells: [[0, 1, 100], [0, 0, 1], [1, 2, 1000], [2, 1, 10], [2, 0, 0], [2, 7, 5]] }))
    expect([g.cols, g.rows, g.start, g.end, g.timestamps]).toEqual([3, 3, 100, 103, [100, 101, 102]])
    expect(g.buckets.map((b) => b.index)).toEqual([10, 11, 20])
    expect([...g.rate]).toEqual([100, 0, 1, 0, 1000, 0, 10, 0, 0])
    expect([g.version, g.moved, [...g.written]]).toEqual([0, 0, [0, 0, 0]])
  })
})

describe('mergeTailInto', () => {
  // a base of columns 100, 110, 120 (step 10, three columns) and a tail read from its last column on
  const b0 = bucket(10, 0, 2048, '< 2.05 µs')
  const b1 = bucket(11, 2048, 4096, '2.05 µs – 4.1 µs')
  const b2 = bucket(20, 1048576, 2097152, '1.05 ms – 2.1 ms')
  const base = heatmap({
    step: 10, start: 100, end: 130, timestamps: [100, 110, 120], buckets: [b0, b1],
    cells: [[0, 0, 1], [1, 1, 2], [2, 0, 3], [2, 1, 6]], total: [1, 2, 9], max: 6,
  })
  const tail = (over: Partial<HeatmapResult>) =>
    heatmap({ step: 10, start: 120, end: 140, timestamps: [120, 130], buckets: [b0, b2], cells: [[0, 0, 5], [1, 1, 7]], total: [5, 7], max: 7, ...over })
  const grow = tail({ start: 120, end: 130, timestamps: [120], buckets: [b0], cells: [[0, 0, 4]], total: [4], max: 4 })

  it.each([
    // column 110 keeps its base cell (bucket 11); 120 is the tail's (5 in bucket 10, not the base's 3, and nothing in 11); 130 is new
    ['replaces the columns the tail covers, adds the newer, and drops as many of the oldest', tail({}), 110, [[0, 11, 2], [1, 10, 5], [2, 20, 7]], 1, [1, 3]],
    ['grows the newest column in place while the tail stays within it', grow, 100, [[0, 10, 1], [1, 11, 2], [2, 10, 4]], 0, [2, 3]],
    // a tail longer than the range: every column is new, the tail's from the range's start on
    ['moves a whole range on', tail({ end: 170, timestamps: [120, 130, 140, 150, 160], buckets: [b0], cells: [[0, 0, 1], [2, 0, 2], [4, 0, 3]] }), 140, [[0, 10, 2], [2, 10, 3]], 1, [0, 3]],
  ])('%s', (_, t, start, cells, moved, dirty) => {
    const g = gridOf(base)
    expect(mergeTailInto(g, t)).toBe(true)
    expect([g.start, g.end, g.timestamps]).toEqual([start, start + 30, [start, start + 10, start + 20]])
    expect(cellsOf(g)).toEqual(cells)
    expect(g.version).toBe(1)
    // a raster repaints everything after a move (moved: the version of it), else the columns the tail wrote
    expect(g.moved).toBe(moved)
    expect(dirtyColumns(g.written, 0)).toEqual(dirty)
  })

  it('adds the rows of buckets new in the tail, each cell kept on its bucket', () => {
    const g = gridOf(base)
    mergeTailInto(g, tail({}))
    expect(g.buckets.map((b) => b.index)).toEqual([10, 11, 20])
    expect([g.rows, g.rate.length, g.rowOf.get(20)]).toEqual([3, 9, 2])
  })

  it('changes no cell when the same tail comes again, and ends as the newest tail alone would', () => {
    // each second's tail is read from the full read's last column on: merging them one after the
    // other ends where merging only the newest into the full read does
    const once = gridOf(base)
    mergeTailInto(once, tail({}))
    const each = gridOf(base)
    for (const t of [grow, tail({ cells: [[0, 0, 9]] }), tail({}), tail({})]) mergeTailInto(each, t)
    expect([each.start, each.timestamps, each.buckets]).toEqual([once.start, once.timestamps, once.buckets])
    expect(cellsOf(each)).toEqual(cellsOf(once))
  })

  it.each([
    ['no tail', null],
    ['another step', tail({ step: 60 })],
    ['another dimension', tail({ dim: 'size' })],
    ['a tail past the end (a gap: wait for the next full read)', tail({ start: 140, end: 160, timestamps: [140, 150] })],
    ['a tail before the start', tail({ start: 90, end: 140, timestamps: [90, 100, 110, 120, 130] })],
    ['a tail off the columns', tail({ start: 125, end: 140, timestamps: [125, 135] })],
    ['an empty tail', tail({ timestamps: [], cells: [] })],
    ['an older tail (a late answer)', tail({ start: 110, end: 120, timestamps: [110], cells: [[0, 0, 9]] })],
  ])('leaves the grid as it is with %s', (_, t) => {
    const g = gridOf(base)
    expect(mergeTailInto(g, t)).toBe(false)
    expect([g.start, g.version, cellsOf(g)]).toEqual([100, 0, cellsOf(gridOf(base))])
  })
})

describe('the raster of cells', () => {
  // four colours along a black to (30, 60, 90) scale: levels 0, 1/3, 2/3 and 1
  const palette = paletteOf([[0, 0, 0], [30, 60, 90]], 4)
  const colour = (level: number) => [10 * level, 20 * level, 30 * level, 255]
  /** The pixel of a cell of an image `cols` wide and `h` high, the lowest row at the bottom. */
  const pixel = (px: Uint8ClampedArray, cols: number, h: number, col: number, row: number) => [...px.slice(((h - 1 - row) * cols + col) * 4, ((h - 1 - row) * cols + col) * 4 + 4)]

  it('has the colour key\'s range, and a level per cell along it', () => {
    const r = heatmap()
    const g = gridOf(r)
    // cells [0,0,100] [0,2,1] [1,1,1000] [2,0,10] [2,2,0]: log10 1 .. 3 spans the key
    expect(gridRange(g, 0, g.rows)).toEqual({ min: 0, max: 3 })
    expect(gridRange(g, 0, g.rows)).toEqual(cellsRange(r.cells))
    // as the colour key (the option's visualMap) maps the same cells
    const vm = toHeatmapOption(r, { valueUnit: 'ns', rateUnit: 'ops/s', selection: null, raster: true }).visualMap as { min: number; max: number }
    expect([vm.min, vm.max]).toEqual([0, 3])
    expect(cellsRange(r.cells)).toEqual(colorRange(cellData(r.cells)))
    const px = new Uint8ClampedArray(3 * 3 * 4)
    paintColumns(g, 0, 3, { min: 0, max: 3 }, palette, px)
    expect([0, 1, 2].map((row) => pixel(px, 3, 3, 0, row))).toEqual([colour(2), [0, 0, 0, 0], colour(0)])
    expect([pixel(px, 3, 3, 1, 1), pixel(px, 3, 3, 2, 0), pixel(px, 3, 3, 2, 2)]).toEqual([colour(3), colour(1), [0, 0, 0, 0]])
  })

  it.each([
    ['every row', 0, 3, { min: 0, max: 3 }],
    ['the lower two', 0, 2, { min: 1, max: 3 }],
    ['the top one', 2, 3, { min: -1, max: 0 }], // a flat map still gets a decade
    ['none', 1, 1, { min: 0, max: 1 }],
  ])('takes the colour range of %s rows', (_, lo, hi, range) => {
    expect(gridRange(gridOf(heatmap()), lo, hi)).toEqual(range)
  })

  it('sums a column over the rows drawn', () => {
    const g = gridOf(heatmap())
    expect([columnSum(g, 0, 0, 3), columnSum(g, 0, 1, 3), columnSum(g, 2, 0, 3), columnSum(g, 3, 0, 3)]).toEqual([101, 1, 10, 0])
  })

  it('shares one colour scale when given one', () => {
    const px = new Uint8ClampedArray(3 * 3 * 4)
    paintColumns(gridOf(heatmap()), 0, 3, { min: 0, max: 4 }, palette, px)
    expect(pixel(px, 3, 3, 1, 1)).toEqual(colour(2)) // 1000: 3/4 of the way, the nearest level 2/3
  })

  it('paints one pixel per cell, the lowest bucket at the bottom, empty cells clear', () => {
    // 2 columns x 3 rows: rates 1, 10 and 100 (levels 0, 0.5 and 1) in column 0, only row 1 filled in column 1
    const g = { cols: 2, rows: 3, rate: Float64Array.from([1, 10, 100, 0, 100, 0]) }
    const px = new Uint8ClampedArray(2 * 3 * 4).fill(9)
    paintColumns(g, 0, 3, { min: 0, max: 2 }, paletteOf([[0, 0, 0], [200, 100, 50]], 3), px)
    const at = (x: number, y: number) => [...px.slice((y * 2 + x) * 4, (y * 2 + x) * 4 + 4)]
    expect(at(0, 2)).toEqual([0, 0, 0, 255]) // column 0, row 0 (bottom): level 0
    expect(at(0, 1)).toEqual([100, 50, 25, 255]) // row 1: half way
    expect(at(0, 0)).toEqual([200, 100, 50, 255]) // row 2 (top): level 1
    expect([at(1, 0), at(1, 1), at(1, 2)]).toEqual([[0, 0, 0, 0], [200, 100, 50, 255], [0, 0, 0, 0]])
  })

  it('paints the rows drawn, and only the columns asked', () => {
    const g = gridOf(heatmap())
    const px = new Uint8ClampedArray(3 * 2 * 4).fill(9)
    paintColumns(g, 1, 3, { min: 0, max: 3 }, palette, px, 1, 2) // rows b11, b20 of column 1
    expect([pixel(px, 3, 2, 1, 0), pixel(px, 3, 2, 1, 1)]).toEqual([colour(3), [0, 0, 0, 0]])
    expect([pixel(px, 3, 2, 0, 0), pixel(px, 3, 2, 2, 1)]).toEqual([[9, 9, 9, 9], [9, 9, 9, 9]])
  })

  it.each([
    [[0, 0, 3, 3], 0, [2, 4]],
    [[0, 0, 3, 3], 3, [0, 0]],
    [[1, 0, 2], 0, [0, 3]],
    [[5, 5], 4, [0, 2]],
    [[0, 3, 3, 0], 0, [1, 3]],
    [[], 0, [0, 0]],
  ])('finds the columns written since a version: %j since %s are %j', (written, since, cols) => {
    expect(dirtyColumns(Uint32Array.from(written), since)).toEqual(cols)
  })

  it.each([
    ['a second within the newest column', (t: (o: Partial<HeatmapResult>) => HeatmapResult) => [t({ end: 130, timestamps: [120], cells: [[0, 0, 40]] })]],
    ['a new column', (t: (o: Partial<HeatmapResult>) => HeatmapResult) => [t({})]],
    ['two seconds', (t: (o: Partial<HeatmapResult>) => HeatmapResult) => [t({ end: 130, timestamps: [120], cells: [[0, 1, 0.5]] }), t({ end: 130, timestamps: [120], cells: [[0, 0, 2]] })]],
  ])('repaints after %s as a whole painting would', (_, tails) => {
    const bk = heatmap().buckets
    const base = heatmap({ step: 10, start: 100, end: 130, timestamps: [100, 110, 120], buckets: [bk[0]!, bk[1]!], cells: [[0, 0, 1], [1, 1, 100], [2, 0, 10]] })
    const tail = (over: Partial<HeatmapResult>) => heatmap({ step: 10, start: 120, end: 140, timestamps: [120, 130], buckets: [bk[0]!, bk[1]!], cells: [[0, 1, 3], [1, 0, 30]], ...over })
    const range = { min: 0, max: 2 }
    const g = gridOf(base)
    const px = new Uint8ClampedArray(g.cols * g.rows * 4)
    paintColumns(g, 0, g.rows, range, palette, px)
    const painted = g.version
    for (const t of tails(tail)) mergeTailInto(g, t)
    const [c0, c1] = g.moved > painted ? [0, g.cols] : dirtyColumns(g.written, painted)
    paintColumns(g, 0, g.rows, range, palette, px, c0, c1)
    const whole = new Uint8ClampedArray(px.length)
    paintColumns(g, 0, g.rows, range, palette, whole)
    expect([...px]).toEqual([...whole])
    expect(c1 - c0).toBe(g.moved > painted ? 3 : 1)
  })

  it('leaves the time labels, the annotations and the band to the raster: a new column changes nothing of the chart, a band over a span neither', () => {
    const opts = { valueUnit: 'ns', rateUnit: 'ops/s', selection: null, raster: true, annotations: [{ label: 'r1', from: 101, to: 103 }] }
    const now = toHeatmapOption(heatmap(), opts)
    const later = toHeatmapOption(heatmap({ start: 101, end: 104, timestamps: [101, 102, 103] }), opts)
    expect(later).toEqual(now)
    expect(now.series as unknown[]).toHaveLength(1)
    expect((now.xAxis as { axisLabel: { show: boolean } }).axisLabel.show).toBe(false)
    const spanned = (r: HeatmapResult) => toHeatmapOption(r, { ...opts, selection: { lo: 10, hi: 11 }, span: { start: 101, end: 102 } })
    expect(spanned(heatmap({ start: 101, end: 104, timestamps: [101, 102, 103] }))).toEqual(now)
    expect(spanned(heatmap())).toEqual(now)
  })

  it('leaves the cells and the band out of the option when a raster draws them, and keeps the rest', () => {
    const r = heatmap()
    const drawn = toHeatmapOption(r, { valueUnit: 'ns', rateUnit: 'ops/s', selection: { lo: 10, hi: 11 }, raster: true })
    const own = toHeatmapOption(r, { valueUnit: 'ns', rateUnit: 'ops/s', selection: { lo: 10, hi: 11 } })
    const series = (o: typeof drawn) => (o.series as { data: unknown[]; markArea?: unknown }[])[0]!
    expect(series(drawn).data).toEqual([])
    expect(series(own).data).toHaveLength(4)
    expect(series(drawn).markArea).toBeUndefined()
    expect(series(own).markArea).toMatchObject({ data: [[{ yAxis: -0.5 }, { yAxis: 1.5 }]] })
    expect(drawn.grid).toEqual(HEAT_GRID)
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
    expect([...paletteOf(stops, 5)]).toEqual([0, 0, 0, 50, 100, 128, 100, 200, 255, 150, 100, 128, 200, 0, 0])
  })

  it('finds the cell under a point, the lowest bucket at the bottom, and none off the plot', () => {
    // a plot of 100 x 40 px inside the margins: 4 columns of 25 px, 2 rows of 20 px
    const [w, h] = [HEAT_GRID.left + HEAT_GRID.right + 100, HEAT_GRID.top + HEAT_GRID.bottom + 40]
    const at = (x: number, y: number) => cellAtPoint(w, h, 4, 2, HEAT_GRID.left + x, HEAT_GRID.top + y)
    expect(at(0, 0)).toEqual({ col: 0, row: 1 })
    expect(at(99, 39)).toEqual({ col: 3, row: 0 })
    expect(at(30, 25)).toEqual({ col: 1, row: 0 })
    expect([at(-1, 5), at(100, 5), at(5, -1), at(5, 40), at(NaN, 5)]).toEqual([null, null, null, null, null])
    // the plot the raster is scaled to is the same rectangle
    expect(plotRect(w, h)).toEqual([HEAT_GRID.left, HEAT_GRID.top, 100, 40])
  })

  it.each([
    ['inside', 30, 25, { col: 1, row: 0 }],
    ['left of the plot', -50, 5, { col: 0, row: 1 }],
    ['right of it, on its last pixel', 100, 39, { col: 3, row: 0 }],
    ['far right and above', 5000, -300, { col: 3, row: 1 }],
    ['below, in the middle', 55, 80, { col: 2, row: 0 }],
    ['anywhere, with nothing to land on', NaN, 5, null],
  ])('clamped, a point %s (%s, %s) gives the nearest cell %j', (_, x, y, cell) => {
    const [w, h] = [HEAT_GRID.left + HEAT_GRID.right + 100, HEAT_GRID.top + HEAT_GRID.bottom + 40]
    expect(cellAtPoint(w, h, 4, 2, HEAT_GRID.left + x, HEAT_GRID.top + y, true)).toEqual(cell)
    expect(cellAtPoint(w, h, 0, 2, HEAT_GRID.left + x, HEAT_GRID.top + y, true)).toBe(null)
  })

  it('says what a cell is in its tooltip', () => {
    expect(cellTip(heatmap(), 1, 1, 1000, 'ops/s')).toEqual([expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/), 'latency 2.05 µs – 4.1 µs', '1,000 ops/s'])
  })
})

describe('timeTicks', () => {
  const DAY = 86400
  it('labels a week at local midnights, a day apart', () => {
    const start = 1763797185 - (1763797185 % 840) // a week of 14-minute columns
    const ticks = timeTicks(start, 840, 720, 10)
    expect(ticks).toHaveLength(7)
    for (const t of ticks) expect(t.label).toMatch(/^\d\d-\d\d 00:00$/)
    ticks.slice(1).forEach((t, i) => expect(t.x - ticks[i]!.x).toBeCloseTo(1 / 7))
    expect(ticks.every((t) => t.x >= 0 && t.x < 1)).toBe(true)
  })

  it.each([
    ['an hour of 12 s columns, 8 labels at most', 12, 300, 8, 6, /^\d\d:\d0:00$/],
    ['an hour, 3 labels at most', 12, 300, 3, 2, /^\d\d:[03]0:00$/],
    ['five minutes of seconds', 1, 300, 10, 10, /^\d\d:\d\d:[03]0$/],
    ['no closer than a column', 60, 5, 100, 5, /^\d\d:\d\d:00$/],
    ['no room for a label', 60, 5, 0, 0, /./],
  ])('%s: %s s x %s columns, %s at most: %s labels', (_, step, cols, most, n, label) => {
    const start = 1763797185 - (1763797185 % step)
    const ticks = timeTicks(start, step, cols, most)
    expect(ticks).toHaveLength(n)
    for (const t of ticks) expect(t.label).toMatch(label)
  })

  it('keeps midnight through a change of summer time', () => {
    // three days from a UTC midnight; the clocks go forward an hour at noon of the second day
    const offset = (ts: number) => (ts < 1.5 * DAY ? 0 : 3600)
    expect(timeTicks(0, 3600, 72, 3, offset).map((t) => t.x)).toEqual([0, 1 / 3, (2 * DAY - 3600) / (3 * DAY)])
  })

  it('spaces a long range in whole days', () => {
    expect(timeTicks(0, 3600, 90 * 24, 10, () => 0).map((t) => Math.round(t.x * 90 * 1e6) / 1e6)).toEqual([0, 9, 18, 27, 36, 45, 54, 63, 72, 81])
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
    expect(spanBetween(120, 110, 10)).toEqual({ start: 110, end: 130 })
    expect(spanBetween(100, 100, 10)).toEqual({ start: 100, end: 110 })
  })

  it('narrows the selected band to its columns on a chart that draws its cells', () => {
    const band = (span: { start: number; end: number }) =>
      (toHeatmapOption(heatmap(), { valueUnit: 'ns', rateUnit: 'ops/s', selection: { lo: 11, hi: 20 }, span }).series as { markArea?: { data: unknown[][] } }[])[0]!.markArea?.data[0]
    expect(band({ start: 101, end: 103 })).toEqual([{ yAxis: 0.5, xAxis: 0.5 }, { yAxis: 2.5, xAxis: 2.5 }])
    expect(band({ start: 90, end: 100 })).toBeUndefined() // its columns have gone by: not over all of them
  })
})

describe('bandRect', () => {
  // columns 100, 110, 120, 130 at step 10 on a plot of 400 x 300 px from (70, 12): 100 px a column;
  // buckets 10, 11, 12 (100 px a row, the lowest at the bottom)
  const r = { timestamps: [100, 110, 120, 130], step: 10, buckets: [bucket(10, 0, 2048, 'a'), bucket(11, 2048, 4096, 'b'), bucket(12, 4096, 8192, 'c')] }
  const plot: [number, number, number, number] = [70, 12, 400, 300]
  it.each([
    ['every column without a span', { lo: 10, hi: 12 }, null, [70, 12, 400, 300]],
    ['the lowest bucket', { lo: 10, hi: 10 }, null, [70, 212, 400, 100]],
    ['the columns of a span', { lo: 11, hi: 12 }, { start: 110, end: 130 }, [170, 12, 200, 200]],
    ['a span ending inside a column: all of it', { lo: 11, hi: 11 }, { start: 125, end: 131 }, [270, 112, 200, 100]],
    ['a band reaching past the rows drawn: the part drawn', { lo: 5, hi: 10 }, { start: 100, end: 110 }, [70, 212, 100, 100]],
    ['a span begun before the first column: from it', { lo: 12, hi: 12 }, { start: 50, end: 115 }, [70, 12, 200, 100]],
    ['a span gone by', { lo: 10, hi: 12 }, { start: 50, end: 100 }, null],
    ['a span yet to come', { lo: 10, hi: 12 }, { start: 140, end: 150 }, null],
    ['a band of no row drawn', { lo: 13, hi: 20 }, null, null],
  ])('%s: band %j, span %j at %j', (_, band, span, rect) => expect(bandRect(r, band, span, plot)).toEqual(rect))

  it('moves left by a column as a new column comes, its span in time', () => {
    const span = { start: 110, end: 130 }
    const later = { ...r, timestamps: [110, 120, 130, 140] }
    expect(bandRect(later, { lo: 11, hi: 12 }, span, plot)).toEqual([70, 12, 200, 200])
    expect(bandRect({ ...r, timestamps: [] }, { lo: 11, hi: 12 }, null, plot)).toBe(null)
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
