// Pure transforms: a directory tree from the API -> treemap or sunburst option, breadcrumb,
// prefix filters and the directory a click re-roots at.
import type { HierarchyNode, HierarchyResult } from '../../api/client'
import type { ChartOption, SunburstSeries, TreemapSeries } from '../../components/EChart'
import { formatRate, formatShare } from '../../lib/format'
import { OTHER_COLOR, colorOf } from '../palette'
import { PATH_DIMS, PREFIX, type ChildRow, type Crumb, type HierarchyOptions, type PrefixChip } from './model'

export function isPathDim(dim: string | null | undefined): boolean {
  return !!dim && PATH_DIMS.includes(dim)
}

/** The `where` key of a prefix filter on `dim`: "file" -> "file^". */
export function prefixKey(dim: string): string {
  return dim + PREFIX
}

/** The directory holding `path`: "/export/home/a" -> "/export/home", "/export" -> "/". */
export function parentOf(path: string): string {
  const i = path.lastIndexOf('/')
  return i > 0 ? path.slice(0, i) : '/'
}

/** From the top down to `root`: "/export/home" -> /, export, home. */
export function crumbs(root: string): Crumb[] {
  const out: Crumb[] = [{ label: '/', path: '/' }]
  let path = ''
  for (const part of root.split('/').filter(Boolean)) {
    path += `/${part}`
    out.push({ label: part, path })
  }
  return out
}

/**
 * Filters with the hierarchy of `dim` rooted at `path`: the prefix filter set to it alone,
 * or removed at the top ('/' or null), since the top also holds names that are not paths.
 */
export function rootWhere(where: Record<string, string[]> | undefined, dim: string, path: string | null): Record<string, string[]> {
  const next = { ...(where ?? {}) }
  delete next[prefixKey(dim)]
  if (path && path !== '/') next[prefixKey(dim)] = [path]
  return next
}

/** The statistic's prefix filters as chips: "file under /export/home". */
export function prefixChips(where: Record<string, string[]> | undefined): PrefixChip[] {
  return Object.entries(where ?? {})
    .filter(([key, values]) => key.endsWith(PREFIX) && key.length > PREFIX.length && values.length > 0)
    .map(([key, values]) => ({ key, label: `${key.slice(0, -PREFIX.length)} under ${values.join(', ')}` }))
}

export function withoutFilter(where: Record<string, string[]> | undefined, key: string): Record<string, string[]> {
  const next = { ...(where ?? {}) }
  delete next[key]
  return next
}

/**
 * Where a click on `node` re-roots the tree: a directory at itself; a file, or a directory's
 * own operations, at the directory that holds them; nothing when that is the root already,
 * or for (other), the folded files and names that are not paths.
 */
export function targetOf(node: HierarchyNode, root: string): string | null {
  let to: string | null = null
  if (node.kind === 'dir') to = node.path
  else if (node.kind === 'self') to = node.path
  else if (node.kind === 'file' && node.path) to = parentOf(node.path)
  return to && to !== root ? to : null
}

/** A unique id per node of a tree: its kind and path, or its parent's for (other). */
export function nodeId(node: HierarchyNode, parentId: string): string {
  if (node.kind === 'other') return `other:${parentId}`
  if (node.kind === 'folded') return 'folded'
  return `${node.kind}:${node.path ?? node.name}`
}

/** Every node of the tree under its id, the root included. */
export function nodeIndex(result: HierarchyResult): Map<string, HierarchyNode> {
  const out = new Map<string, HierarchyNode>()
  const walk = (n: HierarchyNode, parentId: string) => {
    const id = nodeId(n, parentId)
    out.set(id, n)
    for (const c of n.children ?? []) walk(c, id)
  }
  walk(result.tree, '')
  return out
}

const GREY_KINDS = new Set(['other', 'folded'])

interface TreeItem {
  id: string
  name: string
  value: number
  children?: TreeItem[]
  itemStyle?: { color: string }
}

/**
 * The root's children as chart data: each top child has a palette colour its subtree shares.
 * A treemap shades a subtree from its top colour itself; a sunburst needs every node's (`everyNode`).
 */
export function treeData(result: HierarchyResult, everyNode = false): TreeItem[] {
  const rootId = nodeId(result.tree, '')
  let next = 0
  const item = (n: HierarchyNode, parentId: string, inherited: string | null): TreeItem => {
    const id = nodeId(n, parentId)
    const out: TreeItem = { id, name: n.name, value: n.value }
    const colour = GREY_KINDS.has(n.kind) ? OTHER_COLOR : (inherited ?? colorOf(next++))
    if (!inherited || everyNode || colour === OTHER_COLOR) out.itemStyle = { color: colour }
    const kids = (n.children ?? []).filter((c) => c.value > 0)
    if (kids.length) out.children = kids.map((c) => item(c, id, colour))
    return out
  }
  return (result.tree.children ?? []).filter((c) => c.value > 0).map((c) => item(c, rootId, null))
}

function kindText(n: HierarchyNode): string {
  switch (n.kind) {
    case 'dir':
      return n.truncated ? `directory, ${n.elements.toLocaleString('en-US')} files below (deeper levels not shown)` : 'directory'
    case 'self':
      return "the directory's own operations"
    case 'other':
      return `${n.merged} smaller entries summed`
    case 'folded':
      return 'files beyond the busiest per second, folded by the store: they have no path'
    case 'element':
      return 'a name that is not a path'
    default:
      return 'file'
  }
}

/** Tooltip text of a node: its path, rate, share of the root and what it is. */
export function nodeTitle(n: HierarchyNode, result: HierarchyResult, unit: string): string {
  const share = result.total > 0 ? ` (${formatShare(n.value / result.total)})` : ''
  return `${n.path ?? n.name}\n${formatRate(n.value, unit)}${share}\n${kindText(n)}`
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

export function toHierarchyOption(result: HierarchyResult, opts: HierarchyOptions): ChartOption {
  const index = nodeIndex(result)
  const data = treeData(result, opts.mode === 'sunburst')
  const tooltip = {
    confine: true,
    formatter: (p: unknown) => {
      const id = (p as { data?: { id?: string } }).data?.id
      const n = id ? index.get(id) : undefined
      return n ? escapeHtml(nodeTitle(n, result, opts.unit)).replace(/\n/g, '<br/>') : ''
    },
  }
  if (opts.mode === 'sunburst') {
    const series: SunburstSeries = {
      type: 'sunburst',
      id: 'hierarchy',
      data,
      radius: ['14%', '96%'],
      nodeClick: false,
      sort: undefined, // keep the API's order: largest first
      itemStyle: { borderColor: '#fff', borderWidth: 1 },
      label: { rotate: 'radial', minAngle: 10, fontSize: 11, overflow: 'truncate', width: 90 },
      emphasis: { focus: 'ancestor' },
    }
    return { animation: false, tooltip, series: [series] }
  }
  const series: TreemapSeries = {
    type: 'treemap',
    id: 'hierarchy',
    data,
    left: 0,
    top: 0,
    right: 0,
    bottom: 0,
    roam: false,
    nodeClick: false,
    breadcrumb: { show: false },
    visibleMin: 200,
    label: { show: true, fontSize: 11, overflow: 'truncate' },
    upperLabel: { show: true, height: 18, color: '#fff', fontSize: 11, overflow: 'truncate' },
    // levels[0] is ECharts' own root (no label band); a parent's label band takes its border colour
    levels: [
      { itemStyle: { borderWidth: 0, gapWidth: 2 }, upperLabel: { show: false } },
      { itemStyle: { borderWidth: 3, gapWidth: 1, borderColorSaturation: 0.5 } },
      { colorSaturation: [0.3, 0.55], itemStyle: { borderWidth: 2, gapWidth: 1, borderColorSaturation: 0.6 } },
      { colorSaturation: [0.25, 0.5], itemStyle: { borderWidth: 1, gapWidth: 1, borderColorSaturation: 0.65 } },
    ],
  }
  return { animation: false, tooltip, series: [series] }
}

/** The root's children as rows of the list beside the chart (what the chart shows, for keyboards and readers). */
export function childRows(result: HierarchyResult, unit: string): ChildRow[] {
  const rootId = nodeId(result.tree, '')
  return (result.tree.children ?? []).map((n) => ({
    id: nodeId(n, rootId),
    name: n.name,
    kind: n.kind,
    value: n.value,
    share: result.total > 0 ? n.value / result.total : 0,
    target: targetOf(n, result.root),
    title: nodeTitle(n, result, unit),
  }))
}

/** What the chart shows, in words, for its accessible label. */
export function describeTree(result: HierarchyResult, opts: HierarchyOptions, shown = 5): string {
  const kids = (result.tree.children ?? []).slice(0, shown)
  const parts = kids.map((n) => `${n.name} ${formatRate(n.value, opts.unit)}`)
  const head = `${opts.mode} of ${result.dim} under ${result.root}, ${formatRate(result.total, opts.unit)} in all`
  return parts.length ? `${head}: ${parts.join(', ')}` : `${head}: empty`
}
