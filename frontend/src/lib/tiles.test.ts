import { describe, expect, it } from 'vitest'
import type { MetricPublic, TileSpec } from '../api/client'
import { formatWhere, freeId, fromDrafts, newDraft, parseWhere, toDraft, withMetric } from './tiles'

const spec: TileSpec = {
  id: 'net_in',
  title: 'Network in',
  metric: 'net.bytes',
  by: 'interface',
  where: { direction: ['in'], interface: ['eth0', 'eth1'] },
  unit: 'MB/s',
  scale: 1e-6,
  divide_by_cpus: false,
  thresholds: [100, 400, 800, 1100],
}

const diskOps: MetricPublic = {
  name: 'disk.ops', family: 'disk', unit: 'ops/s', noun: 'disk operations per second', description: '',
  dimensions: ['host', 'disk', 'op', 'latency'], histograms: [],
}

describe('tile drafts', () => {
  it('round-trips a tile through the form unchanged', () => {
    const d = toDraft(spec)
    expect(d.filters).toBe('direction=in; interface=eth0,eth1')
    expect(d.scale).toBe('0.000001')
    expect(fromDrafts([d])).toEqual({ tiles: [spec] })
  })

  it('reads filters, merging a dimension given twice and ignoring blanks', () => {
    expect(parseWhere('')).toEqual({})
    expect(parseWhere(' op = read , write ;; client=10.0.0.7\nop=read,commit')).toEqual({ op: ['read', 'write', 'commit'], client: ['10.0.0.7'] })
    expect(parseWhere('op')).toMatch(/cannot read "op": write dimension=value/)
    expect(parseWhere('=read')).toMatch(/cannot read "=read"/)
    expect(parseWhere('op=')).toBe('no value for op')
    expect(formatWhere(undefined)).toBe('')
  })

  it('names the tile and field that is not a number or a filter', () => {
    const d = toDraft(spec)
    expect(fromDrafts([d, { ...d, thresholds: ['1', '2', 'x', '4'] }])).toEqual({ error: 'Tile 2 (Network in), threshold 3: "x" is not a number' })
    expect(fromDrafts([{ ...d, scale: '' }])).toEqual({ error: 'Tile 1 (Network in), scale: "" is not a number' })
    expect(fromDrafts([{ ...d, title: '', filters: 'direction' }])).toEqual({
      error: 'Tile 1 (net_in), filters: cannot read "direction": write dimension=value (values split by commas, filters by semicolons)',
    })
  })

  it('starts a new tile on a metric with a free id, and a metric change drops what belonged to the old one', () => {
    expect(freeId(['tile1', 'tile3'])).toBe('tile2')
    const n = newDraft(diskOps, ['tile1'])
    expect([n.id, n.title, n.unit, n.metric]).toEqual(['tile2', 'disk operations per second', 'ops/s', 'disk.ops'])
    const moved = withMetric({ ...toDraft(spec), divideByCpus: true }, diskOps)
    expect([moved.title, moved.by, moved.filters, moved.unit, moved.scale, moved.divideByCpus]).toEqual(['Network in', '', '', 'ops/s', '1', false])
    expect(moved.thresholds).toEqual(['100', '400', '800', '1100'])
  })
})
