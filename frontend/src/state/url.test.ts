import { describe, expect, it } from 'vitest'
import {
  apiRange,
  decodeStatistic,
  decodeWorksheet,
  encodeStatistic,
  encodeWorksheet,
  EMPTY_WORKSHEET,
  fromSaved,
  makeStatistic,
  pauseTime,
  statisticKeys,
  toWorksheetBody,
  type WorksheetState,
} from './url'

const sheet: WorksheetState = {
  statistics: [
    makeStatistic('nfs.ops', 'client'),
    makeStatistic('nfs.ops', 'file', { client: ['10.0.0.7'] }, 'line', 5),
    makeStatistic('nfs.ops', 'latency', { client: ['10.0.0.7'], op: ['read', 'write'] }, 'heatmap'),
    makeStatistic('nfs.ops', 'client', { file: ['/export/a;b,c=d e%.txt'], latency: ['20:22'] }),
  ],
  range: '1h',
  paused: true,
  at: 1763797185,
  id: 'ab12',
  name: 'Morning run & checks',
  readOnly: true,
}

describe('worksheet URL', () => {
  it('round-trips a whole worksheet', () => {
    const search = encodeWorksheet(sheet)
    const { state, warnings } = decodeWorksheet(search)
    expect(warnings).toEqual([])
    expect(state).toEqual(sheet)
  })

  it('is readable for plain statistics', () => {
    expect(encodeStatistic(makeStatistic('nfs.ops', 'client'))).toBe('nfs.ops;by:client')
    expect(encodeStatistic(makeStatistic('nfs.ops', 'file', { client: ['10.0.0.7'] }))).toBe(
      'nfs.ops;by:file;w:client=10.0.0.7',
    )
    expect(encodeWorksheet({ ...EMPTY_WORKSHEET, statistics: [makeStatistic('disk.ops')] })).toBe('?s=disk.ops')
  })

  it('escapes separators inside file names', () => {
    const s = makeStatistic('nfs.ops', null, { file: ['/a;b,c=d'] })
    const text = encodeStatistic(s)
    expect(text).toBe('nfs.ops;w:file=%2Fa%3Bb%2Cc%3Dd')
    expect(decodeStatistic(text).stat).toEqual(s)
  })

  it('keeps a shown hierarchy and a path prefix filter', () => {
    const s = { ...makeStatistic('nfs.ops', 'file', { 'file^': ['/export/home'] }), hierarchy: 'sunburst' as const }
    const text = encodeStatistic(s)
    expect(text).toBe('nfs.ops;by:file;w:file%5E=%2Fexport%2Fhome;h:sunburst')
    expect(decodeStatistic(text)).toEqual({ stat: s, warnings: [] })
    // links that put it before the filters read the same
    expect(decodeStatistic('nfs.ops;by:file;h:sunburst;w:file%5E=%2Fexport%2Fhome')).toEqual({ stat: s, warnings: [] })
    const bad = decodeStatistic('nfs.ops;by:file;h:pie')
    expect(bad.stat).toEqual(makeStatistic('nfs.ops', 'file'))
    expect(bad.warnings).toEqual(['hierarchy "pie" of nfs.ops is unknown; it is not shown'])
  })

  it('keeps the statistic order and duplicates apart', () => {
    const stats = [makeStatistic('nfs.ops'), makeStatistic('disk.ops'), makeStatistic('nfs.ops')]
    const { state } = decodeWorksheet(encodeWorksheet({ ...EMPTY_WORKSHEET, statistics: stats }))
    expect(state.statistics.map((s) => s.metric)).toEqual(['nfs.ops', 'disk.ops', 'nfs.ops'])
    expect(statisticKeys(state.statistics)).toEqual(['nfs.ops', 'disk.ops', 'nfs.ops#2'])
  })

  it('tolerates bad input with clear fallbacks', () => {
    const { state, warnings } = decodeWorksheet(
      '?range=3y&s=&s=nfs.ops;top:zero;d:pie;zz:1;w:client&s=disk.ops;w:disk=%E0%A4%A&paused=1&at=yesterday&junk',
    )
    expect(state.range).toBe('10m')
    expect(state.paused).toBe(true)
    expect(state.at).toBeNull()
    expect(state.statistics).toEqual([makeStatistic('nfs.ops'), makeStatistic('disk.ops')])
    expect(warnings).toEqual([
      'range "3y" is not a span of a minute to a year like 10m, 6h, 2d or 1w; showing 10m',
      'statistic "" has no metric; it was left out',
      'top "zero" of nfs.ops is not a whole number 1..100; using 10',
      'display "pie" of nfs.ops is unknown; using area',
      'field "zz:1" of nfs.ops is unknown; it was ignored',
      'filter "client" of nfs.ops cannot be read; it was left out',
      'filter "disk=%E0%A4%A" of disk.ops cannot be read; it was left out',
      'pause time "yesterday" is not unix seconds; pausing at now',
    ])
  })

  it('reads a link whose separators were escaped as a whole', () => {
    const { state } = decodeWorksheet('?s=nfs.ops%3Bby%3Aclient')
    expect(state.statistics).toEqual([makeStatistic('nfs.ops', 'client')])
  })

  it('gives a heat map without a dimension the latency one', () => {
    const { stat, warnings } = decodeStatistic('nfs.ops;d:heatmap')
    expect(stat?.by).toBe('latency')
    expect(warnings).toHaveLength(1)
  })

  it('drops the pause time of a live worksheet', () => {
    expect(decodeWorksheet('?at=1763797185').state.at).toBeNull()
  })

  it('keeps how each chart is shown: the legend order, search and highlight, and the crop', () => {
    const legend = { sort: 'name' as const, desc: false, search: '10.0.0;x', highlight: '10.0.0.7' }
    const shown = { ...makeStatistic('nfs.ops', 'client'), legend }
    const cropped = { ...makeStatistic('nfs.ops', 'latency', {}, 'heatmap'), crop: 1 as const }
    const other = { ...makeStatistic('nfs.ops', 'file'), legend: { ...legend, sort: 'last' as const, desc: true, search: '', highlight: '\u0000other' } }
    expect(encodeStatistic(shown)).toBe('nfs.ops;by:client;sort:name;q:10.0.0%3Bx;hl:10.0.0.7')
    expect(encodeStatistic(cropped)).toBe('nfs.ops;by:latency;d:heatmap;crop:1')
    expect(encodeStatistic(other)).toBe('nfs.ops;by:file;sort:-last;hl:%00other')
    const ws = { ...sheet, statistics: [shown, cropped, other] }
    const { state, warnings } = decodeWorksheet(encodeWorksheet(ws))
    expect(warnings).toEqual([])
    expect(state).toEqual(ws)
    // the defaults are not written, and read back as no view at all
    const plain = { ...makeStatistic('nfs.ops', 'client'), legend: { sort: 'mean' as const, desc: true, search: '', highlight: null }, crop: 0 as const }
    expect(encodeStatistic(plain)).toBe('nfs.ops;by:client')
    // the chart stays the same chart (same key) whatever its view
    expect(statisticKeys([shown, cropped])).toEqual(['nfs.ops;by:client', 'nfs.ops;by:latency;d:heatmap'])
  })

  it('reads links made before the legend and crop were kept, and says what it cannot read', () => {
    const old = decodeWorksheet('?range=1h&s=nfs.ops;by:client;top:20&s=nfs.ops;by:latency;d:heatmap;w:client=10.0.0.7')
    expect(old.warnings).toEqual([])
    expect(old.state.statistics).toEqual([
      makeStatistic('nfs.ops', 'client', {}, 'area', 20),
      makeStatistic('nfs.ops', 'latency', { client: ['10.0.0.7'] }, 'heatmap'),
    ])
    expect(old.state.statistics.map((s) => [s.legend, s.crop])).toEqual([[undefined, undefined], [undefined, undefined]])
    const bad = decodeStatistic('nfs.ops;by:client;sort:size;q:%E0%A4%A;crop:2;hl:10.0.0.7')
    expect(bad.stat).toEqual({ ...makeStatistic('nfs.ops', 'client'), legend: { sort: 'mean', desc: true, search: '', highlight: '10.0.0.7' } })
    expect(bad.warnings).toEqual([
      'legend order "size" of nfs.ops is not one of mean, last, name (with "-" for descending); using -mean',
      'legend search "%E0%A4%A" of nfs.ops cannot be read; it was left out',
      'crop "2" of nfs.ops is not one of 0.1, 1, 5 (%); not cropping',
    ])
  })

  it("keeps min/max and an unsynced chart's own time, live or paused", () => {
    const live = { ...makeStatistic('nfs.ops', 'client'), minmax: true, time: { range: '1h', paused: false, at: null } }
    const frozen = { ...makeStatistic('nfs.ops', 'latency', {}, 'heatmap'), time: { range: '2d', paused: true, at: 1763797185 } }
    expect(encodeStatistic(live)).toBe('nfs.ops;by:client;mm:1;t:1h')
    expect(encodeStatistic(frozen)).toBe('nfs.ops;by:latency;d:heatmap;t:2d@1763797185')
    const ws = { ...sheet, statistics: [live, frozen] }
    expect(decodeWorksheet(encodeWorksheet(ws))).toEqual({ state: ws, warnings: [] })
    // its own time is how it is shown, not which chart it is
    expect(statisticKeys([live, frozen])).toEqual(['nfs.ops;by:client', 'nfs.ops;by:latency;d:heatmap'])
    const bad = decodeStatistic('nfs.ops;mm:yes;t:3y;t:1h@-5;t:1h@soon')
    expect(bad.stat).toEqual(makeStatistic('nfs.ops'))
    expect(bad.warnings).toEqual([
      'min/max "yes" of nfs.ops is not 1 or 0; not shown',
      'chart time "3y" of nfs.ops is not a span like 10m or 1h@<unix seconds>; it follows the worksheet',
      'chart time "1h@-5" of nfs.ops is not a span like 10m or 1h@<unix seconds>; it follows the worksheet',
      'chart time "1h@soon" of nfs.ops is not a span like 10m or 1h@<unix seconds>; it follows the worksheet',
    ])
  })

  it('saves how each chart is shown with the worksheet, and reads it back with the same checks', () => {
    const stats = [
      { ...makeStatistic('nfs.ops', 'client'), legend: { sort: 'name' as const, desc: false, search: 'a;b', highlight: '10.0.0.7' }, minmax: true },
      { ...makeStatistic('nfs.ops', 'latency', {}, 'heatmap'), crop: 5 as const, zoom: { lo: 20, hi: 23 }, time: { range: '1h', paused: true, at: 1763797185 } },
      { ...makeStatistic('nfs.ops', 'file'), hierarchy: 'treemap' as const },
      makeStatistic('disk.ops'),
    ]
    const body = toWorksheetBody({ ...sheet, statistics: stats }, 'Morning')
    expect(body.statistics.map((s) => s.view)).toEqual(['sort:name;q:a%3Bb;hl:10.0.0.7;mm:1', 'crop:5;yz:20:23;t:1h@1763797185', 'h:treemap', ''])
    const back = fromSaved({ id: 'w1', ...body })
    expect(back.warnings).toEqual([])
    expect(back.state.statistics).toEqual(stats)
    // a saved view names only how it is shown: what it charts stays the saved statistic's
    const odd = fromSaved({ id: 'w2', name: 'Odd', statistics: [{ metric: 'nfs.ops', by: 'client', where: {}, top: 10, display: 'area', view: 'crop:7;by:file' }] })
    expect(odd.state.statistics).toEqual([makeStatistic('nfs.ops', 'client')])
    expect(odd.warnings).toEqual(['crop "7" of nfs.ops is not one of 0.1, 1, 5 (%); not cropping'])
  })

  it('keeps a heat map\'s bucket zoom in the link, not in its identity', () => {
    const zoomed = { ...makeStatistic('nfs.ops', 'latency', {}, 'heatmap'), crop: 1 as const, zoom: { lo: 20, hi: 23 } }
    expect(encodeStatistic(zoomed)).toBe('nfs.ops;by:latency;d:heatmap;crop:1;yz:20:23')
    const ws = { ...sheet, statistics: [zoomed] }
    expect(decodeWorksheet(encodeWorksheet(ws))).toEqual({ state: ws, warnings: [] })
    expect(statisticKeys([zoomed])).toEqual(statisticKeys([{ ...zoomed, zoom: undefined }]))
    expect(decodeStatistic('nfs.ops;by:latency;d:heatmap;yz:23:20').stat?.zoom).toEqual({ lo: 20, hi: 23 })
    expect(decodeStatistic('nfs.ops;by:latency;d:heatmap;yz:9:9').stat?.zoom).toEqual({ lo: 9, hi: 9 })
  })

  it.each(['20', '20:', ':23', '20:23:25', '-1:4', '20:64', 'a:b', '1.5:3', '20%3A23', ''])('warns of the unreadable bucket zoom "%s" and shows every bucket', (value) => {
    const { stat, warnings } = decodeStatistic(`nfs.ops;by:latency;d:heatmap;yz:${value};crop:1`)
    expect(stat).toEqual({ ...makeStatistic('nfs.ops', 'latency', {}, 'heatmap'), crop: 1 })
    expect(warnings).toEqual([`bucket zoom "${decodeURIComponent(value)}" of nfs.ops is not LO:HI, two bucket exponents 0 to 63; showing every bucket`])
  })

  it('decodes an empty query to the empty worksheet', () => {
    expect(decodeWorksheet('')).toEqual({ state: EMPTY_WORKSHEET, warnings: [] })
    expect(encodeWorksheet(EMPTY_WORKSHEET)).toBe('')
  })
})

describe('API range', () => {
  it('pauses at the newest complete second', () => {
    expect(pauseTime(1_000_500)).toBe(998)
  })

  it('is relative while live and fixed while paused', () => {
    expect(apiRange({ range: '1h', paused: false, at: null })).toEqual({ start: '-1h', end: '-2s' })
    expect(apiRange({ range: '1m', paused: true, at: 1000 })).toEqual({ start: '940', end: '1000' })
  })
})

describe('saved worksheets', () => {
  it('convert to and from the API body', () => {
    const body = toWorksheetBody(sheet, 'x')
    expect(body.range).toEqual({ start: '-1h', end: 'now' })
    const { state, warnings } = fromSaved({ id: 'ab12', ...body })
    expect(warnings).toEqual([])
    expect(state.statistics).toEqual(sheet.statistics)
    expect(state.range).toBe('1h')
    expect(state.paused).toBe(false)
  })
  it('fall back to 10 minutes for a range that is not a span', () => {
    const { state, warnings } = fromSaved({ id: 'x', name: 'x', range: { start: '2025-01-01', end: 'now' } })
    expect(state.range).toBe('10m')
    expect(warnings[0]).toMatch(/not a span/)
  })
  it('keep any span, not only the presets, in the URL and when saved', () => {
    const ws = { ...EMPTY_WORKSHEET, range: '90m', paused: true, at: 1_800_000_000 }
    expect(encodeWorksheet(ws)).toBe('?range=90m&paused=1&at=1800000000')
    expect(decodeWorksheet('?range=90m').state.range).toBe('90m')
    expect(apiRange(ws)).toEqual({ start: '1799994600', end: '1800000000' })
    expect(fromSaved({ id: 'x', name: 'x', range: { start: '-30d', end: 'now' } }).state.range).toBe('30d')
  })
})
