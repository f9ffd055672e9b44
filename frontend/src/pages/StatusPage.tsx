// The status page: Activity tiles (value, weather, 7-day sparkline; an admin chooses them), and the sources.
import { useMemo, useState } from 'react'
import { useSources, useStatus } from '../api/hooks'
import { tileView } from '../charts/sparkline/transform'
import { SparklineTile } from '../charts/sparkline/View'
import { SourceTable } from '../components/SourceTable'
import { openSources } from './SourcesPage'
import { familyIsDemo, familySummary } from '../lib/empty'
import { usageText } from '../lib/format'
import { lastWorksheet, openWorksheet } from '../state/useWorksheet'
import { makeStatistic } from '../state/url'
import { navigate } from '../state/router'
import { EventLog } from './AlertsPage'
import { useMe } from '../auth/session'
import { StatusTilesEditor } from './StatusTilesEditor'

export function StatusPage() {
  const status = useStatus()
  const sources = useSources()
  const tiles = useMemo(() => status.data?.tiles.map((t) => ({ tile: t, view: tileView(t) })) ?? [], [status.data])
  const isAdmin = useMe().data?.role === 'admin'
  const [editing, setEditing] = useState(false)
  return (
    <main className="page">
      <div className="toolbar">
        <h1 className="ws-name">Status</h1>
        {status.data && (
          <div className="muted small" data-testid="status-usage">
            hosts: {status.data.hosts.join(', ') || 'none yet'} · {usageText(status.data)}
          </div>
        )}
      </div>
      {status.error && <div className="error">Cannot read status: {status.error.message}</div>}
      <div className="panel-head activity-head">
        <h2>Activity</h2>
        <span className="small muted">newest second, the last 7 days, and the weather (mean of the last 10 s) from the admin’s thresholds · click a tile to open it in the worksheet</span>
        {isAdmin && (
          <button className="button small-button" onClick={() => setEditing(!editing)} aria-expanded={editing} data-testid="edit-tiles">
            {editing ? 'Close editor' : 'Edit tiles'}
          </button>
        )}
      </div>
      {isAdmin && editing && <StatusTilesEditor onClose={() => setEditing(false)} />}
      <section className="tiles activity-tiles" data-testid="status-tiles" aria-label="Activity">
        {tiles.map(({ tile, view }) => (
          <SparklineTile
            key={tile.id}
            tile={view}
            demo={familyIsDemo(sources.data, tile.metric.split('.')[0] ?? '')}
            onOpen={() => {
              const ws = lastWorksheet()
              const stat = makeStatistic(tile.metric, tile.by ?? null, tile.where ?? {})
              openWorksheet({ ...ws, statistics: [...ws.statistics, stat] })
            }}
          />
        ))}
      </section>
      <section className="panel status-alerts" aria-label="Recent alerts" data-testid="status-alerts">
        <div className="panel-head">
          <h2>Recent alerts</h2>
          <a
            className="small"
            href="/alerts"
            onClick={(e) => {
              e.preventDefault()
              navigate('/alerts')
            }}
          >
            rules and the full log →
          </a>
        </div>
        <EventLog start="-7d" limit={8} compact kind={['alert.fired', 'alert.reposted', 'alert.cleared']} />
      </section>
      <section className="panel" aria-label="Sources">
        <div className="panel-head">
          <h2>Sources</h2>
          {sources.data && <span className="mono small">{familySummary(sources.data)}</span>}
          <a
            className="small"
            href="/sources"
            onClick={(e) => {
              e.preventDefault()
              openSources()
            }}
          >
            agents, probe cost, suspend and resume →
          </a>
        </div>
        {sources.error && <div className="error">{sources.error.message}</div>}
        {sources.data && <SourceTable sources={sources.data.sources} />}
      </section>
    </main>
  )
}
