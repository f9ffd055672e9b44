import { describe, expect, it } from 'vitest'
import type { MetricPublic } from '../api/client'
import { makeStatistic } from '../state/url'
import { drillChoices, drillStatistic, isHistogram, memberDims } from './drill'

const nfs: MetricPublic = {
  name: 'nfs.ops',
  family: 'nfs',
  unit: 'ops/s',
  noun: 'NFS operations per second',
  description: '',
  dimensions: ['host', 'proto', 'op', 'client', 'share', 'file', 'latency', 'size', 'offset'],
  histograms: [
    { name: 'latency', unit: 'ns', lo: 10, hi: 35 },
    { name: 'size', unit: 'bytes', lo: 9, hi: 24 },
    { name: 'offset', unit: 'bytes', lo: 12, hi: 45 },
  ],
}

describe('drill-down', () => {
  it('offers the remaining dimensions after the clicked one', () => {
    const stat = makeStatistic('nfs.ops', 'client', { op: ['read'] })
    const choices = drillChoices(nfs, stat, 'client')
    expect(choices.map((c) => c.label)).toEqual(['by host', 'by proto', 'by share', 'by file', 'by latency', 'by size', 'by offset'])
    expect(choices.filter((c) => c.heatmap).map((c) => c.dim)).toEqual(['latency', 'size', 'offset'])
  })

  it('offers every other dimension for the total', () => {
    const choices = drillChoices(nfs, makeStatistic('nfs.ops', 'client'), null)
    expect(choices.map((c) => c.dim)).not.toContain('client')
    expect(choices).toHaveLength(8)
  })

  it('adds the element as a filter and opens a heat map for a histogram', () => {
    const stat = makeStatistic('nfs.ops', 'client', { op: ['read'] }, 'line', 5)
    expect(drillStatistic(nfs, stat, { dim: 'client', key: '10.0.0.7' }, 'file')).toEqual(
      makeStatistic('nfs.ops', 'file', { op: ['read'], client: ['10.0.0.7'] }, 'line', 5),
    )
    const hm = drillStatistic(nfs, makeStatistic('nfs.ops', 'file'), { dim: 'file', key: '/a' }, 'latency')
    expect(hm).toEqual(makeStatistic('nfs.ops', 'latency', { file: ['/a'] }, 'heatmap'))
    expect(stat.where).toEqual({ op: ['read'] })
  })

  it('keeps a heat-map band on members drilled into', () => {
    const stat = makeStatistic('nfs.ops', 'latency', {}, 'heatmap')
    const next = drillStatistic(nfs, stat, { dim: 'client', key: 'c1' }, 'file', { latency: ['20:22'] })
    expect(next.where).toEqual({ latency: ['20:22'], client: ['c1'] })
    expect(next.display).toBe('area')
  })

  it('knows histogram dimensions and the free member dimensions', () => {
    expect(isHistogram(nfs, 'latency')).toBe(true)
    expect(isHistogram(nfs, 'client')).toBe(false)
    expect(isHistogram(nfs, null)).toBe(false)
    expect(memberDims(nfs, makeStatistic('nfs.ops', 'latency', { client: ['x'] }))).toEqual(['host', 'proto', 'op', 'share', 'file'])
  })
})
