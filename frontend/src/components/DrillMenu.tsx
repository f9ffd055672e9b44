// The drill-down menu of a breakdown element: pick the next dimension for a new chart.
import type { DrillChoice } from '../lib/drill'
import type { TimeView } from '../state/url'
import { Popover } from './Popover'

export interface DrillTarget {
  /** The element's dimension, or null for the whole statistic. */
  dim: string | null
  key: string
  label: string
  /** A named client's address, shown beside its name (filters use `key`). */
  address?: string | null
  at: { x: number; y: number }
  /** Filters the new chart keeps besides the element (a heat-map band). */
  extraWhere?: Record<string, string[]>
  /** The new chart's own time (a heat-map band's time span). */
  time?: TimeView
}

interface Props {
  target: DrillTarget
  choices: DrillChoice[]
  onChoose: (choice: DrillChoice) => void
  onClose: () => void
  /** For an NFS client: open its diagnosis. */
  onDiagnose?: () => void
}

export function DrillMenu({ target, choices, onChoose, onClose, onDiagnose }: Props) {
  return (
    <Popover at={target.at} onClose={onClose} label={`Drill down into ${target.label}${target.address ? ` (${target.address})` : ''}`} testId="drill-menu" className="menu">
      <div className="menu-title">
        {target.dim ? (
          <>
            {target.dim} <b title={target.address ?? undefined}>{target.label}</b>
            {target.address && (
              <span className="mono muted" data-testid="drill-address">
                {' '}
                {target.address}
              </span>
            )}
          </>
        ) : (
          <b>{target.label}</b>
        )}
        <div className="menu-sub">{target.dim ? 'Open a new chart for it, broken down' : 'Break down'}</div>
      </div>
      {onDiagnose && (
        <button className="menu-item" data-testid="drill-diagnose" onClick={onDiagnose}>
          <span>Why is this client slow?</span>
          <span className="menu-hint">verdict</span>
        </button>
      )}
      {choices.length === 0 && <div className="menu-empty">No dimension left to break down by.</div>}
      {choices.map((c) => (
        <button key={c.dim} className="menu-item" data-testid={`drill-${c.dim}`} onClick={() => onChoose(c)}>
          <span>{c.label}</span>
          {c.heatmap && <span className="menu-hint">heat map</span>}
        </button>
      ))}
    </Popover>
  )
}
