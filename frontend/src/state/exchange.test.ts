import { describe, expect, it } from 'vitest'
import { readWorksheetFile, worksheetFile } from './exchange'
import { EMPTY_WORKSHEET, makeStatistic } from './url'

const ws = {
  ...EMPTY_WORKSHEET,
  range: '2h',
  statistics: [makeStatistic('nfs.ops', 'client', { op: ['read'] }), makeStatistic('nfs.ops', 'latency', {}, 'heatmap', 20)],
}

describe('worksheet files', () => {
  it('round-trip: what is exported is imported the same, without the saved id', () => {
    const back = readWorksheetFile(worksheetFile({ ...ws, id: 'abc' }, 'Morning'))
    expect(back).toEqual({ state: { ...ws, name: 'Morning', id: null }, warnings: [] })
  })

  it('keeps how each chart is shown: legend, crop, min/max, hierarchy, its own time', () => {
    const shown = {
      ...ws,
      statistics: [
        { ...makeStatistic('nfs.ops', 'client'), legend: { sort: 'last' as const, desc: true, search: '10.0', highlight: null }, minmax: true },
        { ...makeStatistic('nfs.ops', 'latency', {}, 'heatmap'), crop: 0.1 as const, time: { range: '1d', paused: true, at: 1763797185 } },
        { ...makeStatistic('nfs.ops', 'file'), hierarchy: 'sunburst' as const, time: { range: '1h', paused: false, at: null } },
      ],
    }
    const text = worksheetFile(shown, 'Incident')
    expect(JSON.parse(text).statistics.map((s: { view: string }) => s.view)).toEqual(['sort:-last;q:10.0;mm:1', 'crop:0.1;t:1d@1763797185', 'h:sunburst;t:1h'])
    expect(readWorksheetFile(text)).toEqual({ state: { ...shown, name: 'Incident' }, warnings: [] })
    const odd = JSON.parse(text)
    odd.statistics[0].view = 42
    odd.statistics[1].view = 'crop:3'
    const r = readWorksheetFile(JSON.stringify(odd))
    if ('error' in r) throw new Error(r.error)
    expect(r.state.statistics.map((s) => [s.legend, s.crop])).toEqual([[undefined, undefined], [undefined, undefined], [undefined, undefined]])
    expect(r.warnings).toEqual(['how nfs.ops was shown ("view") is not text; showing it as by default', 'crop "3" of nfs.ops is not one of 0.1, 1, 5 (%); not cropping'])
  })

  it.each([
    ['not json', 'the file is not JSON'],
    ['[1,2]', 'the file is not a Loupe worksheet (no "format": "loupe-worksheet")'],
    ['{"format":"loupe-worksheet","version":7}', 'the file is version 7 of the format; this Loupe reads version 1'],
  ])('refuses %s', (text, error) => expect(readWorksheetFile(text)).toEqual({ error }))

  it('leaves out what it cannot read, and says so', () => {
    const text = JSON.stringify({
      format: 'loupe-worksheet',
      version: 1,
      name: '',
      range: { start: '-3y' },
      statistics: [
        { metric: 'nfs.ops', top: 5000, display: 'pie' },
        { metric: 42 },
        { metric: 'disk.ops', where: { disk: 'sda' } },
        'junk',
        { metric: 'cpu.util', by: 'mode' },
      ],
    })
    const r = readWorksheetFile(text)
    if ('error' in r) throw new Error(r.error)
    expect(r.state.name).toBe('Imported worksheet')
    expect(r.state.range).toBe('10m')
    expect(r.state.statistics).toEqual([makeStatistic('nfs.ops'), makeStatistic('cpu.util', 'mode')])
    expect(r.warnings).toEqual([
      'top of nfs.ops is not a whole number 1..100; using 10',
      'statistic 2 cannot be read; it was left out',
      'statistic 3 cannot be read; it was left out',
      'statistic 4 cannot be read; it was left out',
      'saved range "-3y" is not a span like -10m or -2d; showing 10m',
    ])
  })
})
