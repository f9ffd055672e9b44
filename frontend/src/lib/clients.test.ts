import { describe, expect, it } from 'vitest'
import type { DiagnosisLink } from '../api/client'
import { decodeClientView, diagnosisWindow, encodeClientView, evidenceWorksheet, latencyText, linkBusyText, linkShareText, percentText, verdictLevel } from './clients'

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

describe('the client\'s link', () => {
  const link = (over: Partial<DiagnosisLink>): DiagnosisLink => ({
    host: 'nas1',
    interface: 'eth0',
    capacity_bytes_per_s: 1.25e9,
    client_in_bytes_per_s: 1e6,
    client_out_bytes_per_s: 4.75e8,
    link_in_bytes_per_s: 2e7,
    link_out_bytes_per_s: 1.15e9,
    share: 0.38,
    share_direction: 'out',
    utilisation: 0.92,
    utilisation_direction: 'out',
    ...over,
  })
  it.each([
    [link({}), "38 % of eth0's 10 Gbit/s (sent to it)", '92 % out'],
    [link({ interface: 'bond0.100', capacity_bytes_per_s: 3.125e9, share: 0.0052, share_direction: 'in', utilisation: 0.0061, utilisation_direction: 'in' }),
      "0.52 % of bond0.100's 25 Gbit/s (received from it)", '0.61 % in'],
    [link({ capacity_bytes_per_s: 1.25e7, share: 0.999 }), "100 % of eth0's 100 Mbit/s (sent to it)", '92 % out'],
    [link({ capacity_bytes_per_s: null, share: null, utilisation: null }), 'eth0, speed unknown', '–'],
    [link({ link_in_bytes_per_s: null, link_out_bytes_per_s: null, utilisation: null }), "38 % of eth0's 10 Gbit/s (sent to it)", '–'],
    [null, 'no data', '–'],
  ])('%#: share and busy', (l, share, busy) => {
    expect(linkShareText(l)).toBe(share)
    expect(linkBusyText(l)).toBe(busy)
  })
  it('words a share with two digits', () => {
    expect([0.38, 0.9549, 0.0004, 1.5].map(percentText)).toEqual(['38 %', '95 %', '0.04 %', '150 %'])
  })
})
