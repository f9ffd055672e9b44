// The directory tree of a path breakdown: a treemap or sunburst, a breadcrumb back up, and
// the root's children as a list. Clicking a directory (in the chart or the list) re-roots it.
import { useMemo } from 'react'
import type { HierarchyResult } from '../../api/client'
import { EChart } from '../../components/EChart'
import { formatRate, formatShare } from '../../lib/format'
import { middleEllipsis } from '../palette'
import type { HierarchyMode, HierarchyOptions } from './model'
import { childRows, crumbs, describeTree, nodeIndex, prefixChips, targetOf, toHierarchyOption } from './transform'
import './hierarchy.css'

interface Props extends HierarchyOptions {
  result: HierarchyResult
  onMode: (mode: HierarchyMode) => void
  /** Re-root at a directory; '/' goes back to the top. */
  onRoot: (path: string) => void
}

const MODES: { id: HierarchyMode; label: string; title: string }[] = [
  { id: 'treemap', label: 'Treemap', title: 'Nested rectangles, area by rate' },
  { id: 'sunburst', label: 'Sunburst', title: 'Rings from the root outwards, angle by rate' },
]

export function HierarchyView({ result, mode, unit, onMode, onRoot }: Props) {
  const option = useMemo(() => toHierarchyOption(result, { mode, unit }), [result, mode, unit])
  const index = useMemo(() => nodeIndex(result), [result])
  const rows = useMemo(() => childRows(result, unit), [result, unit])
  const path = crumbs(result.root)
  return (
    <div className="hier" data-testid="hierarchy" data-root={result.root}>
      <div className="hier-bar">
        <nav aria-label={`Directory of the ${result.dim} hierarchy`} className="hier-crumbs" data-testid="hierarchy-crumbs">
          {path.map((c, i) => {
            const here = i === path.length - 1
            return (
              <span key={c.path}>
                {i > 1 && <span className="hier-sep">/</span>}
                <button
                  className="link-button"
                  aria-current={here ? 'location' : undefined}
                  disabled={here}
                  data-path={c.path}
                  title={here ? `Showing ${c.path}` : `Back up to ${c.path}`}
                  onClick={() => onRoot(c.path)}
                >
                  {c.label}
                </button>
              </span>
            )
          })}
        </nav>
        <span className="muted" data-testid="hierarchy-total">
          {formatRate(result.total, unit)} in all
        </span>
        <div className="segmented small" role="group" aria-label="Hierarchy style">
          {MODES.map((m) => (
            <button key={m.id} className={mode === m.id ? 'active' : ''} aria-pressed={mode === m.id} title={m.title} onClick={() => onMode(m.id)}>
              {m.label}
            </button>
          ))}
        </div>
      </div>
      {result.total > 0 ? (
        <div className="hier-body">
          <EChart
            option={option}
            className="hier-chart"
            testId="hierarchy-chart"
            ariaLabel={describeTree(result, { mode, unit })}
            onEvents={{
              click: (e) => {
                const node = e.dataId ? index.get(e.dataId) : undefined
                const to = node ? targetOf(node, result.root) : null
                if (to) onRoot(to)
              },
            }}
          />
          <table className="table hier-list" data-testid="hierarchy-list" aria-label={`${result.dim} under ${result.root}`}>
            <tbody>
              {rows.map((r) => (
                <tr key={r.id} data-kind={r.kind} data-name={r.name} data-value={r.value} title={r.title}>
                  <td className="legend-label">
                    {r.target ? (
                      <button className="link-button" onClick={() => onRoot(r.target!)} title={`Show ${r.target} (filters the chart to it)`}>
                        {middleEllipsis(r.name, 26)}
                      </button>
                    ) : (
                      middleEllipsis(r.name, 26)
                    )}
                  </td>
                  <td className="num">{formatRate(r.value, unit)}</td>
                  <td className="num muted">{formatShare(r.share)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <div className="empty" data-testid="hierarchy-empty">
          Nothing under {result.root} over this range.
        </div>
      )}
      {!!result.notes?.length && (
        <div className="hier-notes muted" data-testid="hierarchy-notes">
          {result.notes.join(' ')}
        </div>
      )}
    </div>
  )
}

/** A chart's prefix filters (file under /export/home) as chips, each removable. */
export function PrefixChips({ where, onRemove }: { where: Record<string, string[]> | undefined; onRemove: (key: string) => void }) {
  const chips = prefixChips(where)
  if (!chips.length) return null
  return (
    <div className="filter-chips" data-testid="filter-chips">
      {chips.map((c) => (
        <span key={c.key} className="filter-chip" data-testid="filter-chip" data-key={c.key}>
          {c.label}
          <button className="icon-button" aria-label={`Remove filter: ${c.label}`} title="Remove this filter" onClick={() => onRemove(c.key)}>
            ✕
          </button>
        </span>
      ))}
    </div>
  )
}
