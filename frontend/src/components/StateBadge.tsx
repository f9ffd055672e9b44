// A source's state as a badge: active / standby / suspended / off / error.
import { stateBadge } from '../lib/sources'

export function StateBadge({ state }: { state: string }) {
  const b = stateBadge(state)
  return (
    <span className={`state-badge state-badge-${b.tone}`} data-testid="state-badge" data-state={state} title={`${b.label}: ${b.meaning}`}>
      <span aria-hidden>{b.icon}</span> {b.label}
    </span>
  )
}
