import { describe, expect, it } from 'vitest'
import type { HierarchyNode, HierarchyResult } from '../../api/client'
import { OTHER_COLOR, colorOf } from '../palette'
import {
  childRows,
  crumbs,
  describeTree,
  isPathDim,
  nodeIndex,
  parentOf,
  prefixChips,
  rootWhere,
  targetOf,
  toHierarchyOption,
  treeData,
  withoutFilter,
} from './transform'

function node(kind: HierarchyNode['kind'], name: string, path: string | null, value: number, children: HierarchyNode[] = []): HierarchyNode {
  return { kind, name, path, value, elements: Math.max(1, children.length), merged: kind === 'other' ? 3 : 0, truncated: false, children }
}

const home = node('dir', 'home', '/export/home', 60, [
  node('dir', 'a', '/export/home/a', 40, [node('file', 'f1', '/export/home/a/f1', 40)]),
  node('self', '(this directory)', '/export/home', 15),
  node('other', '(other)', null, 5),
])
const result: HierarchyResult = {
  statistic: { metric: 'nfs.ops', by: 'file', where: {}, name: 'NFS operations per second broken down by file', unit: 'ops/s' },
  dim: 'file',
  root: '/export',
  tier: 'second',
  start: 0,
  end: 600,
  depth: 3,
  top: 10,
  total: 100,
  nodes: 9,
  approximate: true,
  notes: [],
  tree: node('dir', 'export', '/export', 100, [
    home,
    node('dir', 'db', '/export/db', 25),
    node('folded', '(other files)', null, 10),
    node('file', 'notes.txt', '/export/notes.txt', 5),
    node('file', 'empty', '/export/empty', 0),
  ]),
}

describe('hierarchy paths and filters', () => {
  it('knows the path dimensions', () => {
    expect(['file', 'share', 'client', null].map(isPathDim)).toEqual([true, true, false, false])
  })

  it('walks from the top down to the root', () => {
    expect(crumbs('/')).toEqual([{ label: '/', path: '/' }])
    expect(crumbs('/export/home')).toEqual([
      { label: '/', path: '/' },
      { label: 'export', path: '/export' },
      { label: 'home', path: '/export/home' },
    ])
    expect(parentOf('/export/home/a')).toBe('/export/home')
    expect(parentOf('/export')).toBe('/')
  })

  it('roots the filters at a directory, replacing the prefix and keeping the rest; the top removes it', () => {
    const where = { client: ['10.0.0.7'], 'file^': ['/export', '/srv'] }
    expect(rootWhere(where, 'file', '/export/home')).toEqual({ client: ['10.0.0.7'], 'file^': ['/export/home'] })
    expect(rootWhere(where, 'file', '/')).toEqual({ client: ['10.0.0.7'] })
    expect(rootWhere(undefined, 'share', '/export/db')).toEqual({ 'share^': ['/export/db'] })
    expect(where['file^']).toEqual(['/export', '/srv']) // not changed in place
  })

  it('shows prefix filters as chips and removes one', () => {
    const where = { client: ['10.0.0.7'], 'file^': ['/export/home'], 'share^': ['/a', '/b'], '^': ['/x'] }
    expect(prefixChips(where)).toEqual([
      { key: 'file^', label: 'file under /export/home' },
      { key: 'share^', label: 'share under /a, /b' },
    ])
    expect(withoutFilter(where, 'file^')).toEqual({ client: ['10.0.0.7'], 'share^': ['/a', '/b'], '^': ['/x'] })
    expect(prefixChips({})).toEqual([])
  })

  it('re-roots a click at the directory meant, and nowhere for what has no directory', () => {
    const [homeNode, db, folded, notes] = result.tree.children!
    expect(targetOf(homeNode!, '/export')).toBe('/export/home')
    expect(targetOf(db!, '/export')).toBe('/export/db')
    expect(targetOf(homeNode!.children![0]!.children![0]!, '/export')).toBe('/export/home/a') // a file: its directory
    expect(targetOf(homeNode!.children![1]!, '/export')).toBe('/export/home') // the directory's own operations
    expect(targetOf(notes!, '/export')).toBeNull() // its directory is the root already
    expect(targetOf(folded!, '/export')).toBeNull()
    expect(targetOf(homeNode!.children![2]!, '/export')).toBeNull()
  })
})

describe('hierarchy chart', () => {
  it('gives every node a unique id and finds it again', () => {
    const index = nodeIndex(result)
    expect(index.size).toBe(10)
    expect(index.get('dir:/export/home')?.value).toBe(60)
    expect(index.get('self:/export/home')?.kind).toBe('self')
    expect(index.get('other:dir:/export/home')?.value).toBe(5)
    expect(index.get('folded')?.name).toBe('(other files)')
  })

  it('draws the root children with their subtrees, a colour per top child, grey for what is summed, no empty nodes', () => {
    const data = treeData(result)
    expect(data.map((d) => [d.name, d.value])).toEqual([['home', 60], ['db', 25], ['(other files)', 10], ['notes.txt', 5]])
    expect(data.map((d) => d.itemStyle?.color)).toEqual([colorOf(0), colorOf(1), OTHER_COLOR, colorOf(2)])
    expect(data[0]!.children!.map((c) => c.id)).toEqual(['dir:/export/home/a', 'self:/export/home', 'other:dir:/export/home'])
    expect(data[0]!.children![2]!.itemStyle?.color).toBe(OTHER_COLOR)
    expect(data[0]!.children![0]!.itemStyle).toBeUndefined() // inherits its top directory's colour
    expect(data[1]!.children).toBeUndefined()
    // a sunburst gets the colour on every node
    const every = treeData(result, true)
    expect(every[0]!.children!.map((c) => c.itemStyle?.color)).toEqual([colorOf(0), colorOf(0), OTHER_COLOR])
    expect(every[0]!.children![0]!.children![0]!.itemStyle?.color).toBe(colorOf(0))
  })

  it('builds a treemap with its own breadcrumb and zoom off, or a sunburst', () => {
    const tm = toHierarchyOption(result, { mode: 'treemap', unit: 'ops/s' })
    const s = (tm.series as { type: string; nodeClick: unknown; breadcrumb: { show: boolean }; data: unknown[] }[])[0]!
    expect(s.type).toBe('treemap')
    expect(s.nodeClick).toBe(false)
    expect(s.breadcrumb.show).toBe(false)
    expect(s.data).toEqual(treeData(result))
    const sb = toHierarchyOption(result, { mode: 'sunburst', unit: 'ops/s' })
    const t = (sb.series as { type: string; nodeClick: unknown; data: unknown[] }[])[0]!
    expect([t.type, t.nodeClick]).toEqual(['sunburst', false])
    expect(t.data).toEqual(treeData(result, true))
  })

  it('says what a node is in its tooltip, escaped', () => {
    const tm = toHierarchyOption(
      { ...result, tree: { ...result.tree, children: [node('file', '<b>', '/export/<b>', 100)] } },
      { mode: 'treemap', unit: 'ops/s' },
    )
    const fmt = (tm.tooltip as { formatter: (p: unknown) => string }).formatter
    expect(fmt({ data: { id: 'file:/export/<b>' } })).toBe('/export/&#60;b&#62;<br/>100 ops/s (100.0 %)<br/>file')
    expect(fmt({ data: {} })).toBe('')
    const full = toHierarchyOption(result, { mode: 'treemap', unit: 'ops/s' })
    const f2 = (full.tooltip as { formatter: (p: unknown) => string }).formatter
    expect(f2({ data: { id: 'folded' } })).toContain('folded by the store: they have no path')
    expect(f2({ data: { id: 'other:dir:/export/home' } })).toContain('3 smaller entries summed')
  })

  it('lists the root children for keyboards and describes the chart in words', () => {
    const rows = childRows(result, 'ops/s')
    expect(rows.map((r) => [r.name, r.share, r.target])).toEqual([
      ['home', 0.6, '/export/home'],
      ['db', 0.25, '/export/db'],
      ['(other files)', 0.1, null],
      ['notes.txt', 0.05, null],
      ['empty', 0, null],
    ])
    expect(describeTree(result, { mode: 'treemap', unit: 'ops/s' }, 2)).toBe(
      'treemap of file under /export, 100 ops/s in all: home 60 ops/s, db 25 ops/s',
    )
    expect(describeTree({ ...result, tree: { ...result.tree, children: [] } }, { mode: 'sunburst', unit: 'ops/s' })).toBe(
      'sunburst of file under /export, 100 ops/s in all: empty',
    )
  })
})
