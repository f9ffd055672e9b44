import type { SourcePublic } from '../api/client'
import { formatDateTime } from '../lib/format'
import { StateBadge } from './StateBadge'

export function SourceTable({ sources }: { sources: SourcePublic[] }) {
  if (!sources.length) return <div className="muted">No agent has reported yet.</div>
  return (
    <table className="table sources" data-testid="sources-table">
      <thead>
        <tr>
          <th>Source</th>
          <th>Host</th>
          <th>Families</th>
          <th>State</th>
          <th>Reason</th>
        </tr>
      </thead>
      <tbody>
        {sources.map((s) => (
          <tr key={`${s.agent}/${s.name}`} title={`agent ${s.agent}, last seen ${formatDateTime(s.last_seen)}`}>
            <td>
              {s.name} {s.demo && <span className="badge badge-demo">demo data</span>}
            </td>
            <td>{s.host ?? '–'}</td>
            <td className="mono">{s.families.join(', ')}</td>
            <td>
              <StateBadge state={s.state} />
            </td>
            <td className="muted">{s.reason || '–'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  )
}
