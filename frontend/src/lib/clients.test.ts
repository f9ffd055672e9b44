import { describe, expect, it } from 'vitest'
import { decodeClientView, diagnosisWindow, encodeClientView, evidenceWorksheet, latencyText, verdictLevel } from './clients'

describe('client view in the URL', () => {
  it('round-trips and names what it cannot read', () => {
    const v = { client: '10.0.0.7', range: '1h' as const, at: 1795400000 }
    expect(decodeClientView(encodeClientView(v))).toEqual({ view: v, warnings: [] })
    expect(encodeClientView({ client: 'a', range: '10m', at: null })).toBe('?client=a')
    const bad = decodeClientView('?range=2y&at=soon')
    expect(bad.view).toEqual({ client: null, range: '10m', at: null })
    expect(bad.warnings).toHaveLength(3)
  })
  it('asks the API for the window', () => {
    expect(diagnosisWindow({ client: 'a', range: '10m', at: null })).toEqual({ start: '-10m', end: '-2s' })
    expect(diagnosisWindow({ client: 'a', range: '1h', at: 10000 })).toEqual({ start: '6400', end: '10000' })
  })
})

describe('wording', () => {
  it.each([
    [0.0007, '700 µs'],
    [0.1, '100 ms'],
    [2.5, '2.50 s'],
    [null, '–'],
  ])('latency %s', (s, text) => expect(latencyText(s)).toBe(text))
  it('levels', () => {
    expect(verdictLevel('healthy')).toBe('ok')
    expect(verdictLevel('network-bound')).toBe('warn')
    expect(verdictLevel('server-latency-bound')).toBe('bad')
    expect(verdictLevel('idle')).toBe('none')
  })
  it('opens evidence as a chart, histograms as heat maps', () => {
    const v = { client: '10.0.0.7', range: '10m' as const, at: null }
    const ws = evidenceWorksheet({ metric: 'nfs.ops', by: 'latency', where: { client: ['10.0.0.7'] } }, v)
    expect(ws.statistics[0]).toMatchObject({ metric: 'nfs.ops', by: 'latency', display: 'heatmap', where: { client: ['10.0.0.7'] } })
    expect(ws.paused).toBe(false)
    expect(evidenceWorksheet({ metric: 'nfs.inflight', by: 'op' }, { ...v, at: 500 })).toMatchObject({ paused: true, at: 500 })
  })
})
