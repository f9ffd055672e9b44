import { useSources } from '../api/hooks'
import { emptyState } from '../lib/empty'

export function EmptyState({ family }: { family: string }) {
  const { data } = useSources()
  const e = emptyState(family, data)
  return (
    <div className="empty" data-testid="empty-state">
      <div className="empty-title">{e.title}</div>
      {e.detail && <div className="empty-detail">{e.detail}</div>}
    </div>
  )
}
