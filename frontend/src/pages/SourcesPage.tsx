// The Sources page: each agent with its own cost, its sources with state, reason and
// probe cost, Suspend / Resume, and which families have data. Polls every 2 s.
// Everything an agent reports (ids, names, reasons) is rendered as text, never as HTML.
import { useMemo } from 'react'
import type { SourcePublic } from '../api/client'
import { useSourceControl, useSources, type SourcesAnswer } from '../api/hooks'
import { Sparkline } from '../charts/sparkline/View'
import { ControlError, SourceControlButton } from '../components/SourceControl'
import { StateBadge } from '../components/StateBadge'
import { formatDateTime } from '../lib/format'
import {
  COST_COLUMNS,
  STALE_AFTER_S,
  STATES,
  agentFigures,
  agentViews,
  costCells,
  costDetail,
  decodeSourcesView,
  encodeSourcesView,
  familyRows,
  filterAgents,
  formatAgo,
  recordCosts,
  sourceKey,
  stateCounts,
  trackPending,
  type Action,
  type AgentView,
  type CostSample,
  type SourcesView,
} from '../lib/sources'
import { useNowMs } from '../state/clock'
import { navigate, useLocation } from '../state/router'

const POLL_MS = 2_000

/** The view last shown, so that the navigation link comes back to it. */
let lastSearch = ''

export function openSources(view?: SourcesView) {
  navigate(`/sources${view ? encodeSourcesView(view) : lastSearch}`)
}

// Samples seen while this page is open, kept across visits (the API reports only the last second).
const costHistory = new Map<string, CostSample[]>()
const pendingSince = new Map<string, { action: Action; at: number }>()

export function SourcesPage() {
  const { search } = useLocation()
  lastSearch = search
  const { view, warnings } = useMemo(() => decodeSourcesView(search), [search])
  const setView = (next: SourcesView) => navigate(`/sources${encodeSourcesView(next)}`, { replace: true })
  const sources = useSources(POLL_MS)
  const nowMs = useNowMs()
  const data = sources.data

  // Both helpers are idempotent for the same answer, so running them during render is safe.
  const history = useMemo(() => (data ? new Map(recordCosts(costHistory, data.sources)) : costHistory), [data])
  const since = useMemo(() => (data ? new Map(trackPending(pendingSince, data.sources, Date.now())) : pendingSince), [data])

  const serverNowS = (nowMs + (data?.serverOffsetMs ?? 0)) / 1000
  const agents = useMemo(() => (data ? agentViews(data, serverNowS) : []), [data, serverNowS])
  const shown = filterAgents(agents, view)
  const counts = data ? stateCounts(data.sources) : null

  return (
    <main className="page sources-page" data-testid="sources-page">
      <div className="toolbar">
        <div className="toolbar-group">
          <h1 className="ws-name">Sources</h1>
          <label className="filter">
            <span className="muted small">agent</span>
            <select
              data-testid="filter-agent"
              value={view.agent ?? ''}
              onChange={(e) => setView({ ...view, agent: e.target.value || null })}
            >
              <option value="">all agents</option>
              {agents.map((a) => (
                <option key={a.agent} value={a.agent}>
                  {a.agent}
                </option>
              ))}
              {view.agent && !agents.some((a) => a.agent === view.agent) && <option value={view.agent}>{view.agent}</option>}
            </select>
          </label>
          <div className="segmented small" role="group" aria-label="Show sources in state" data-testid="filter-state">
            <button className={view.state === null ? 'active' : ''} aria-pressed={view.state === null} onClick={() => setView({ ...view, state: null })}>
              all{data ? ` ${data.sources.length}` : ''}
            </button>
            {STATES.map((s) => (
              <button
                key={s}
                data-state={s}
                className={view.state === s ? 'active' : ''}
                aria-pressed={view.state === s}
                onClick={() => setView({ ...view, state: view.state === s ? null : s })}
              >
                {s}
                {counts ? ` ${counts[s]}` : ''}
              </button>
            ))}
          </div>
        </div>
        <div className="muted small">updated every {POLL_MS / 1000} s</div>
      </div>
      {warnings.length > 0 && (
        <div className="notice" data-testid="url-warnings">
          <span>{warnings.join('; ')}</span>
          <button className="icon-button" onClick={() => setView(view)}>
            clean up the link
          </button>
        </div>
      )}
      {sources.error && (
        <div className="error" data-testid="sources-error">
          Cannot read sources: {sources.error.message}
          {data && ` (showing the answer from ${formatDateTime(sources.dataUpdatedAt / 1000)})`}
        </div>
      )}
      {!data && !sources.error && <div className="loading">Loading sources…</div>}
      {data && <Families data={data} />}
      {data && !agents.length && <div className="empty big">No agent has reported yet.</div>}
      {data && agents.length > 0 && !shown.length && (
        <div className="empty" data-testid="sources-filtered-out">
          No source matches this view.{' '}
          <button className="button" onClick={() => setView({ agent: null, state: null })}>
            show all
          </button>
        </div>
      )}
      {shown.map((a) => (
        <AgentSection key={a.agent} agent={a} nowS={serverNowS} history={history} since={since} nowMs={nowMs} />
      ))}
    </main>
  )
}

function Families({ data }: { data: SourcesAnswer }) {
  const rows = familyRows(data)
  return (
    <section className="panel families" aria-label="Families" data-testid="families">
      <div className="panel-head">
        <h2>Families</h2>
        <span className="muted small">what each kind of data comes from, or why there is none</span>
      </div>
      <ul className="family-list">
        {rows.map((r) => (
          <li key={r.family} className={`family ${r.ok ? 'family-ok' : 'family-missing'}`} data-testid={`family-${r.family}`} data-ok={r.ok}>
            <span className={`state ${r.ok ? 'state-ok' : 'state-bad'}`} aria-label={r.ok ? 'has an active source' : 'no active source'}>
              {r.ok ? '✓' : '✗'}
            </span>{' '}
            <span className="mono family-name">{r.family}</span>
            <span className="family-detail" data-testid="family-detail">
              {r.detail}
            </span>
          </li>
        ))}
      </ul>
    </section>
  )
}

function AgentSection({
  agent,
  nowS,
  nowMs,
  history,
  since,
}: {
  agent: AgentView
  nowS: number
  nowMs: number
  history: Map<string, CostSample[]>
  since: Map<string, { action: Action; at: number }>
}) {
  const f = agentFigures(agent.stats)
  const inProcess = agent.stats?.in_process
  const demo = agent.sources.length > 0 && agent.sources.every((s) => s.demo)
  return (
    <section className="panel agent-section" aria-label={`Agent ${agent.agent}`} data-testid="agent-section" data-agent={agent.agent}>
      <div className="panel-head agent-head">
        <h2 className="mono" data-testid="agent-id">
          {agent.agent}
        </h2>
        {inProcess !== undefined && (
          <span
            className="badge"
            data-testid="agent-process"
            title={inProcess ? 'runs inside the server process: its CPU and RSS are the whole server\'s' : 'a separate agent process pushing to this server'}
          >
            {inProcess ? 'in the server process' : 'separate process'}
          </span>
        )}
        {demo && <span className="badge badge-demo">demo data</span>}
        {agent.stale && (
          <span className="badge badge-stale" data-testid="agent-stale" title={`no report for more than ${STALE_AFTER_S} s`}>
            stale
          </span>
        )}
        {f.clockSkewed && (
          <span className="badge badge-stale" data-testid="agent-clock-skewed" title="its seconds are placed by the server's clock, shifted by the offset">
            clock off by {f.clock}
          </span>
        )}
        <dl className="agent-figures">
          <div>
            <dt>CPU</dt>
            <dd data-testid="agent-cpu" title="% of one core over its last second">
              {f.cpu}
            </dd>
          </div>
          <div>
            <dt>RSS</dt>
            <dd data-testid="agent-rss">{f.rss}</dd>
          </div>
          <div>
            <dt>clock</dt>
            <dd data-testid="agent-clock" title="the agent's clock minus the server's at its last request">
              {f.clock}
            </dd>
          </div>
          <div>
            <dt>queue</dt>
            <dd data-testid="agent-queue" title="frames waiting to be delivered">
              {f.queue}
            </dd>
          </div>
          <div>
            <dt>dropped frames</dt>
            <dd data-testid="agent-dropped" className={f.dropped !== '0' && f.dropped !== '–' ? 'warn-text' : ''}>
              {f.dropped}
            </dd>
          </div>
          <div>
            <dt>last seen</dt>
            <dd data-testid="agent-last-seen" className={agent.stale ? 'bad-text' : ''} title={agent.lastSeen ? formatDateTime(agent.lastSeen) : ''}>
              {agent.lastSeen ? formatAgo(nowS - agent.lastSeen) : 'never'}
            </dd>
          </div>
        </dl>
      </div>
      {agent.stats === null && <div className="muted small panel-note">This agent has not reported its own cost since the server started.</div>}
      <div className="table-scroll">
        <table className="table sources-detail" data-testid="agent-sources">
          {/* Fixed widths, so that every agent's table lines up with the others. */}
          <colgroup>
            <col className="col-source" />
            <col className="col-host" />
            <col className="col-families" />
            <col className="col-state" />
            {COST_COLUMNS.map((c) => (
              <col key={c.key} className="col-cost" />
            ))}
            <col className="col-spark" />
            <col className="col-control" />
          </colgroup>
          <thead>
            <tr>
              <th>Source</th>
              <th>Host</th>
              <th>Families</th>
              <th>State</th>
              {COST_COLUMNS.map((c) => (
                <th key={c.key} className="num" title={c.help}>
                  {c.label}
                </th>
              ))}
              <th title="BPF CPU over the last 2 minutes, as this page saw it">trend</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {agent.sources.map((s) => {
              const key = sourceKey(s)
              const p = since.get(key)
              return <SourceRow key={key} source={s} samples={history.get(key)} pendingForMs={p ? nowMs - p.at : 0} />
            })}
          </tbody>
        </table>
      </div>
    </section>
  )
}

function SourceRow({ source: s, samples, pendingForMs }: { source: SourcePublic; samples: CostSample[] | undefined; pendingForMs: number }) {
  const control = useSourceControl()
  const cells = costCells(s.cost)
  // A new array only when a sample was added, so the chart redraws once per report.
  const n = samples?.length ?? 0
  const lastTs = samples?.[n - 1]?.ts
  const points = useMemo(() => (samples ? samples.slice() : []), [samples, n, lastTs])
  return (
    <>
      <tr data-testid="source-row" data-source={s.name} data-state={s.state} data-requested={s.suspend_requested}>
        <td>
          <span className="source-name" data-testid="source-name">
            {s.name}
          </span>{' '}
          {s.demo && <span className="badge badge-demo">demo data</span>}
        </td>
        <td>{s.host ?? '–'}</td>
        <td className="mono families-cell">{s.families.join(', ')}</td>
        <td className="state-cell">
          <StateBadge state={s.state} />
          {s.reason && (
            <div className="source-reason" data-testid="source-reason">
              {s.reason}
            </div>
          )}
        </td>
        {COST_COLUMNS.map((c) => (
          <td
            key={c.key}
            className={`num cost${cells[c.key].warn ? ' warn-text' : ''}`}
            data-testid={`cost-${c.key}`}
            title={c.key === 'events' && s.cost ? costDetail(s.cost) : c.help}
          >
            {cells[c.key].text}
          </td>
        ))}
        <td className="spark-cell">
          {s.cost && points.length > 1 ? <Sparkline points={points} label={`BPF CPU of ${s.name}`} className="cost-spark" testId="cost-spark" /> : null}
        </td>
        <td className="control-cell">
          <SourceControlButton source={s} pendingForMs={pendingForMs} control={control} />
        </td>
      </tr>
      {control.error && (
        <tr className="control-error-row" data-source={s.name}>
          <td colSpan={COST_COLUMNS.length + 6}>
            <ControlError source={s} control={control} />
          </td>
        </tr>
      )}
    </>
  )
}
