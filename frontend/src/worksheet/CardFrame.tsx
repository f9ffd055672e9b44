// The chrome of a chart card: title, markers, actions, and a body.
import type { ReactNode } from 'react'
import type { MetricPublic, Schemas } from '../api/client'
import { useSources } from '../api/hooks'
import { familyIsDemo } from '../lib/empty'
import { namedTitle, type Names } from '../lib/names'
import type { Statistic } from '../state/url'

export interface CardInfo {
  family: string
  /** The statistic's English name from the API (the catalog's noun until it answers), its client filter named. */
  title: string
  /** The name as the API gave it, with addresses, when naming changed it. */
  hover?: string
  unit: string
  demo: boolean
}

export function useCardInfo(
  stat: Statistic,
  metric: MetricPublic | undefined,
  fromApi: Schemas['StatisticPublic'] | undefined,
  names?: Names,
): CardInfo {
  const { data: sources } = useSources()
  const family = metric?.family ?? stat.metric.split('.')[0] ?? ''
  const title = fromApi ? namedTitle(fromApi.name, fromApi.where, names) : `${metric?.noun ?? stat.metric}…`
  return {
    family,
    title,
    hover: fromApi && title !== fromApi.name ? fromApi.name : undefined,
    unit: fromApi?.unit ?? metric?.unit ?? '',
    demo: familyIsDemo(sources, family),
  }
}

interface Props {
  info: CardInfo
  query: { isPending: boolean; error: Error | null }
  badges?: ReactNode
  actions?: ReactNode
  footer?: ReactNode
  onRemove?: () => void
  children: ReactNode
}

export function CardFrame({ info, query, badges, actions, footer, onRemove, children }: Props) {
  const { title } = info
  const { error } = query
  return (
    <section className="card" data-testid="chart-card" aria-label={title}>
      <header className="card-head">
        <h2 className="card-title" data-testid="chart-title" title={info.hover}>
          {title}
        </h2>
        <div className="card-badges">
          {badges}
          {info.demo && <DemoBadge />}
        </div>
        <div className="card-actions">
          {actions}
          {onRemove && (
            <button className="icon-button" onClick={onRemove} title="Remove this chart" aria-label="Remove chart" data-testid="remove-chart">
              ✕
            </button>
          )}
        </div>
      </header>
      {error && (
        <div className="error" role="alert" data-testid="chart-error">
          {error.message}
        </div>
      )}
      {query.isPending && !error && <div className="loading">Loading…</div>}
      {children}
      {footer && <footer className="card-foot">{footer}</footer>}
    </section>
  )
}

export function ApproximateBadge({ notes }: { notes: string[] }) {
  const why =
    'Approximate: each second, the store keeps only the busiest files of each host (the per-second ' +
    "top K) and folds the rest into '(other files)', as an NFS probe does with files past its " +
    'per-second key table. Files outside those in some seconds are undercounted here, and their ' +
    'share shows up under (other files).'
  return (
    <span className="badge badge-approx" title={[why, ...notes].join('\n')} tabIndex={0} data-testid="approximate">
      approximate
    </span>
  )
}

function DemoBadge() {
  return (
    <span className="badge badge-demo" title="These figures come from the synthetic NAS 'demo-nas', not from a real server">
      demo data
    </span>
  )
}
