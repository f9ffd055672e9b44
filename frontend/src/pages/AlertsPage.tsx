// Alerts: the rules with their state, a form to make or change one (admins), and the event log with
// each webhook post's attempts. /alerts?new=<statistic> opens the form for a chart's statistic;
// /alerts?event=<id> (a webhook post's link) shows that event first.
import { useMemo, useState, type FormEvent } from 'react'
import { useAlertRules, useDeleteAlert, useDeliveries, useEvent, useEvents, useSaveAlert, useTestAlert } from '../api/alerts'
import type { AlertRulePublic, EventPublic, MetricPublic } from '../api/client'
import { useMetrics } from '../api/hooks'
import { can } from '../auth/roles'
import type { Me } from '../auth/session'
import { elementLabel } from '../charts/palette'
import { ClientLabel } from '../components/ClientLabel'
import { ErrorLine } from '../components/ErrorLine'
import { MetricOptions } from '../components/MetricOptions'
import { bodyOf, boundsText, DAYS, deliveryText, dimNoun, draftOf, KIND_TEXT, messageParts, newDraft, openCount, perElementDims, ruleText, type Day, type Draft, type Duration, type DurationUnit } from '../lib/alerts'
import { formatDateTime, sig3 } from '../lib/format'
import { CLIENT_DIM, namedTitle, type Names } from '../lib/names'
import { navigate, useLocation } from '../state/router'
import { decodeStatistic, EMPTY_WORKSHEET, encodeStatistic, makeStatistic, type Statistic } from '../state/url'
import { openWorksheet } from '../state/useWorksheet'

/** The alerts page, its form open on a chart's statistic (per element of its breakdown, if any). */
export function openAlertFor(stat: Statistic) {
  navigate(`/alerts?new=${encodeURIComponent(encodeStatistic(makeStatistic(stat.metric, stat.by ?? null, stat.where)))}`)
}

function DurationInput({ label, value, onChange, testId, allowZero }: { label: string; value: Duration; onChange: (d: Duration) => void; testId: string; allowZero?: boolean }) {
  return (
    <span className="duration">
      <input
        type="number"
        min={allowZero ? 0 : 1}
        step="any"
        className="narrow"
        aria-label={label}
        data-testid={testId}
        value={value.n}
        onChange={(e) => onChange({ ...value, n: Number(e.target.value) })}
      />
      <select aria-label={`unit of ${label}`} value={value.unit} onChange={(e) => onChange({ ...value, unit: e.target.value as DurationUnit })}>
        <option value="s">s</option>
        <option value="min">min</option>
        <option value="h">h</option>
      </select>
    </span>
  )
}

interface Bounds {
  top: number
  maxOpen: number
}

function RuleForm({ rule, initial, metrics, bounds, onDone }: { rule: AlertRulePublic | null; initial: Draft; metrics: MetricPublic[]; bounds: Bounds; onDone: () => void }) {
  const save = useSaveAlert()
  const [d, setD] = useState<Draft>(initial)
  const [problem, setProblem] = useState<string | null>(null)
  const set = (patch: Partial<Draft>) => setD((x) => ({ ...x, ...patch }))
  const metric = metrics.find((m) => m.name === d.metric)
  const unit = metric?.unit ?? ''
  const dims = perElementDims(metric)

  function submit(e: FormEvent) {
    e.preventDefault()
    const res = bodyOf(d)
    if ('error' in res) return setProblem(res.error)
    setProblem(null)
    save.mutate({ id: rule?.id ?? null, body: res.body }, { onSuccess: onDone })
  }

  return (
    <form className="alert-form" onSubmit={submit} data-testid="alert-form" aria-label={rule ? `Edit alert ${rule.name}` : 'New alert'}>
      {problem && (
        <div className="error" role="alert" data-testid="alert-form-problem">
          {problem}
        </div>
      )}
      <ErrorLine error={save.error} />
      <div className="alert-grid">
        <label className="field">
          <span>Name</span>
          <input value={d.name} onChange={(e) => set({ name: e.target.value })} data-testid="alert-name" maxLength={120} />
        </label>
        <label className="field">
          <span>Statistic</span>
          <select
            value={d.metric}
            onChange={(e) => {
              const next = perElementDims(metrics.find((m) => m.name === e.target.value))
              set({ metric: e.target.value, by: next.includes(d.by) ? d.by : '' })
            }}
            data-testid="alert-metric"
          >
            <MetricOptions metrics={metrics} />
          </select>
        </label>
        <label className="field">
          <span>Filters (dim=value, space-separated)</span>
          <input value={d.filters} onChange={(e) => set({ filters: e.target.value })} placeholder="e.g. op=read client=10.0.0.7" data-testid="alert-filters" />
        </label>
        <label className="field">
          <span>Fire for</span>
          <select value={d.by} onChange={(e) => set({ by: e.target.value })} data-testid="alert-by">
            <option value="">the total</option>
            {dims.map((dim) => (
              <option key={dim} value={dim}>
                each {dimNoun(dim)} on its own
              </option>
            ))}
          </select>
          {d.by && (
            <span className="muted small" data-testid="alert-by-note">
              each {dimNoun(d.by)} that crosses the threshold fires, and clears, on its own; the {bounds.top} busiest are checked each second, at most {bounds.maxOpen} open at once
            </span>
          )}
        </label>
        <div className="field">
          <span>Condition</span>
          <span className="alert-inline">
            <select aria-label="condition" value={d.condition} onChange={(e) => set({ condition: e.target.value as Draft['condition'] })} data-testid="alert-condition">
              <option value="above">exceeds</option>
              <option value="below">falls below</option>
            </select>
            <input type="number" step="any" className="narrow" aria-label="threshold" value={d.threshold} onChange={(e) => set({ threshold: e.target.value })} data-testid="alert-threshold" />
            <span className="muted">{unit}</span>
          </span>
        </div>
        <div className="field">
          <span>For at least</span>
          <DurationInput label="hold time" value={d.hold} onChange={(hold) => set({ hold })} testId="alert-hold" />
        </div>
        <div className="field">
          <span>Clears after it stops for</span>
          <DurationInput label="clear-after time" value={d.clear} onChange={(clear) => set({ clear })} testId="alert-clear" />
        </div>
        <div className="field">
          <span>While open, post again every (0: once)</span>
          <DurationInput label="repost interval" value={d.repost} onChange={(repost) => set({ repost })} testId="alert-repost" allowZero />
        </div>
        <fieldset className="field alert-days">
          <legend>Days</legend>
          {DAYS.map((day) => (
            <label key={day} className="alert-day">
              <input
                type="checkbox"
                checked={d.days.includes(day)}
                onChange={(e) => set({ days: e.target.checked ? DAYS.filter((x) => x === day || d.days.includes(x)) : d.days.filter((x): x is Day => x !== day) })}
              />
              {day}
            </label>
          ))}
        </fieldset>
        <div className="field">
          <label className="alert-inline">
            <input type="checkbox" checked={d.hours} onChange={(e) => set({ hours: e.target.checked })} data-testid="alert-hours" />
            <span>Only between</span>
          </label>
          <span className="alert-inline">
            <input type="time" aria-label="from time of day" value={d.from} disabled={!d.hours} onChange={(e) => set({ from: e.target.value })} />
            <span>and</span>
            <input type="time" aria-label="to time of day" value={d.to} disabled={!d.hours} onChange={(e) => set({ to: e.target.value })} />
          </span>
        </div>
        <label className="field">
          <span>Time zone (IANA; empty: the server's)</span>
          <input value={d.timezone} onChange={(e) => set({ timezone: e.target.value })} placeholder="e.g. Europe/Berlin" data-testid="alert-timezone" />
        </label>
        <label className="field">
          <span>Webhook (JSON POST per event)</span>
          <input type="url" value={d.webhook} onChange={(e) => set({ webhook: e.target.value })} placeholder="https://…" data-testid="alert-webhook" />
        </label>
        <label className="field">
          <span>Signing secret {rule?.has_secret && d.secret === null ? '(set; type to replace)' : '(optional)'}</span>
          <input
            type="password"
            autoComplete="new-password"
            value={d.secret ?? ''}
            onChange={(e) => set({ secret: e.target.value })}
            placeholder={rule?.has_secret ? 'unchanged' : ''}
            data-testid="alert-secret"
          />
        </label>
        <label className="alert-inline field">
          <input type="checkbox" checked={d.enabled} onChange={(e) => set({ enabled: e.target.checked })} data-testid="alert-enabled" />
          <span>Enabled</span>
        </label>
      </div>
      <div className="form-actions">
        <button type="button" className="button" onClick={onDone}>
          Cancel
        </button>
        <button type="submit" className="button button-primary" disabled={save.isPending} data-testid="alert-save">
          {rule ? 'Save alert' : 'Create alert'}
        </button>
      </div>
    </form>
  )
}

function StateBadge({ rule }: { rule: AlertRulePublic }) {
  if (!rule.enabled) return <span className="state-badge state-badge-idle">disabled</span>
  const s = rule.state
  if (s.active && rule.by)
    return (
      <span className="state-badge state-badge-bad" data-testid="alert-open" title={`the first opened ${formatDateTime(s.since ?? 0)}`}>
        {s.open_count} open
      </span>
    )
  if (s.active)
    return (
      <span className="state-badge state-badge-bad" data-testid="alert-open">
        open since {formatDateTime(s.since ?? 0)}
      </span>
    )
  return <span className="state-badge state-badge-ok">ok</span>
}

/** An element of a rule's breakdown: a client by its name (address on hover), others as they are. */
function Element({ dim, element, names }: { dim: string; element: string; names: Names | undefined }) {
  return dim === CLIENT_DIM ? <ClientLabel address={element} names={names} /> : <>{elementLabel(element)}</>
}

/** A per-element rule's open alerts: each element, since when and its value. */
function OpenElements({ rule, names }: { rule: AlertRulePublic; names: Names | undefined }) {
  if (!rule.by || !rule.state.open.length) return null
  return (
    <ul className="alert-elements" data-testid="alert-open-elements" aria-label={`open alerts of ${rule.name}`}>
      {rule.state.open.map((o) => (
        <li key={o.element} data-testid="alert-open-element" data-element={o.element}>
          {dimNoun(rule.by!)}{' '}
          <b>
            <Element dim={rule.by!} element={o.element} names={names} />
          </b>{' '}
          since {formatDateTime(o.since)}
          {o.value != null && <span className="muted"> · {sig3(o.value)} {rule.unit}</span>}
        </li>
      ))}
    </ul>
  )
}

function Rules({ admin, onEdit }: { admin: boolean; onEdit: (r: AlertRulePublic) => void }) {
  const list = useAlertRules()
  const del = useDeleteAlert()
  const test = useTestAlert()
  const [tested, setTested] = useState<{ id: string; text: string } | null>(null)
  if (list.error) return <div className="error">{list.error.message}</div>
  if (!list.data) return <div className="loading">Loading…</div>
  const rules = { data: list.data.rules }
  const names = list.data.names
  if (!rules.data.length) return <div className="empty">No alert rules yet.{admin ? ' Make one with “New alert”, or from a chart’s bell.' : ''}</div>
  return (
    <>
      <ErrorLine error={del.error ?? test.error} />
      <table className="table" data-testid="alert-rules">
        <thead>
          <tr>
            <th>State</th>
            <th>Alert</th>
            <th>When</th>
            <th className="num">Now</th>
            <th>Webhook</th>
            {admin && <th>Actions</th>}
          </tr>
        </thead>
        <tbody>
          {rules.data.map((r) => (
            <tr key={r.id} data-testid="alert-rule" data-name={r.name} data-active={r.state.active}>
              <td>
                <StateBadge rule={r} />
                <OpenElements rule={r} names={names} />
              </td>
              <td className="wrap">
                <a
                  href="/"
                  title="Open this statistic in the worksheet"
                  onClick={(e) => {
                    e.preventDefault()
                    openWorksheet({ ...EMPTY_WORKSHEET, statistics: [makeStatistic(r.metric, r.by ?? null, r.where, 'line')], range: '1h' })
                  }}
                >
                  <b>{r.name}</b>
                </a>
                <div className="muted small">{namedTitle(r.statistic, r.where, names)}</div>
              </td>
              <td className="wrap">
                {ruleText(r)}
                {r.by && (
                  <div className="muted small" data-testid="alert-bounds">
                    {boundsText(r, list.data.top_elements, list.data.max_open)}
                  </div>
                )}
              </td>
              <td className="num">
                {r.state.value == null ? '–' : `${sig3(r.state.value)} ${r.unit}`}
                {r.by && r.state.value_element != null && (
                  <div className="muted small">
                    {dimNoun(r.by)} <Element dim={r.by} element={r.state.value_element} names={names} />
                  </div>
                )}
              </td>
              <td className="wrap small">
                {r.webhook ?? '–'}
                {r.has_secret && ' (signed)'}
                {tested?.id === r.id && (
                  <div className="muted" data-testid="alert-tested">
                    {tested.text}
                  </div>
                )}
              </td>
              {admin && (
                <td className="admin-actions">
                  <button className="button small-button" onClick={() => onEdit(r)} data-testid="alert-edit">
                    Edit
                  </button>
                  <button
                    className="button small-button"
                    disabled={!r.webhook || test.isPending}
                    title={r.webhook ? 'Post a test event to the webhook now' : 'No webhook set'}
                    onClick={() =>
                      test.mutate(r.id, {
                        onSuccess: (res) => setTested({ id: r.id, text: res.ok ? `test post: HTTP ${res.status} in ${Math.round(res.ms)} ms` : `test post failed: ${res.error}` }),
                      })
                    }
                  >
                    Test
                  </button>
                  <button
                    className="button small-button button-danger"
                    onClick={() => confirm(`Delete the alert “${r.name}”? Its events stay in the log.`) && del.mutate(r.id)}
                  >
                    Delete
                  </button>
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </>
  )
}

/** An event's message, a client element by its name with its address on hover. */
function EventMessage({ event, names }: { event: EventPublic; names: Names | undefined }) {
  return messageParts(event, names).map((p, i) =>
    p.address ? (
      <span key={i} className="client-named" title={p.address} data-address={p.address}>
        {p.text}
      </span>
    ) : (
      <span key={i}>{p.text}</span>
    ),
  )
}

function kindBadge(kind: EventPublic['kind']): string {
  return kind === 'alert.fired' || kind === 'alert.reposted' ? 'state-badge-bad' : kind === 'agent.disconnected' ? 'state-badge-off' : 'state-badge-ok'
}

/** The event a link points at: what happened, its webhook attempts, and its statistic over its time. */
function EventFocus({ id, onClose }: { id: number; onClose: () => void }) {
  const q = useEvent(id)
  return (
    <section className="panel event-focus" aria-label={`Event ${id}`} data-testid="event-focus">
      <div className="panel-head">
        <h2>Event {id}</h2>
        {q.data && <span className={`state-badge ${kindBadge(q.data.event.kind)}`}>{KIND_TEXT[q.data.event.kind]}</span>}
        {q.data && <span className="muted small">{formatDateTime(q.data.event.at)}</span>}
        <button type="button" className="button small-button event-focus-close" onClick={onClose}>
          Close
        </button>
      </div>
      <div className="admin-body">
        {q.error && <div className="error">{q.error.message}</div>}
        {q.data && (
          <>
            <p className="event-focus-message" data-testid="event-focus-message">
              <EventMessage event={q.data.event} names={q.data.names} />
            </p>
            {q.data.worksheet && (
              <a
                href={`/${q.data.worksheet}`}
                data-testid="event-worksheet"
                onClick={(e) => {
                  e.preventDefault()
                  navigate(`/${q.data.worksheet}`)
                }}
              >
                Show its statistic in the worksheet, over the alert’s time
              </a>
            )}
            {q.data.event.delivery !== 'none' && (
              <div className="small">
                Webhook: {deliveryText(q.data.event)}
                <Deliveries event={q.data.event} />
              </div>
            )}
          </>
        )}
      </div>
    </section>
  )
}

function Deliveries({ event }: { event: EventPublic }) {
  const d = useDeliveries(event.id)
  if (!d.data) return null
  return (
    <ul className="deliveries" data-testid="deliveries">
      {d.data.map((x) => (
        <li key={x.attempt}>
          attempt {x.attempt} at {formatDateTime(x.at)} to {x.url}: {x.ok ? `HTTP ${x.status}` : x.error ?? `HTTP ${x.status}`} ({Math.round(x.ms)} ms)
        </li>
      ))}
      {event.next_attempt != null && <li>next attempt at {formatDateTime(event.next_attempt)}</li>}
    </ul>
  )
}

const LOG_RANGES = [
  ['-1h', 'last hour'],
  ['-24h', 'last day'],
  ['-7d', 'last week'],
] as const

export function EventLog({ start, limit, compact, kind, focus }: { start: string; limit: number; compact?: boolean; kind?: EventPublic['kind'][]; focus?: number | null }) {
  const events = useEvents({ start, limit, ...(kind ? { kind } : {}) })
  const [open, setOpen] = useState<number | null>(null)
  if (events.error) return <div className="error">{events.error.message}</div>
  if (!events.data) return <div className="loading">Loading…</div>
  if (!events.data.events.length) return <div className="empty">{kind ? 'No alert fired in this range.' : 'Nothing happened in this range: no alert fired or cleared, and no agent came or went.'}</div>
  return (
    <table className="table event-log" data-testid="event-log">
      <thead>
        <tr>
          <th>Time</th>
          <th>Event</th>
          <th>What</th>
          {!compact && <th>Webhook</th>}
        </tr>
      </thead>
      <tbody>
        {events.data.events.map((e) => (
          <tr key={e.id} data-testid="event" data-kind={e.kind} data-element={e.element ?? undefined} className={[e.delivery !== 'none' && !compact ? 'clickable' : '', e.id === focus ? 'selected' : ''].join(' ').trim()} onClick={() => !compact && e.delivery !== 'none' && setOpen(open === e.id ? null : e.id)}>
            <td>{formatDateTime(e.at)}</td>
            <td>
              <span className={`state-badge ${kindBadge(e.kind)}`}>{KIND_TEXT[e.kind]}</span>
            </td>
            <td className="wrap" data-testid="event-message">
              <EventMessage event={e} names={events.data.names} />
            </td>
            {!compact && (
              <td className="wrap small" data-testid="event-delivery" data-delivery={e.delivery}>
                {e.delivery !== 'none' && (
                  <button type="button" className="th-sort" aria-expanded={open === e.id} aria-label={`webhook attempts of event ${e.id}`}>
                    {deliveryText(e)} {open === e.id ? '▾' : '▸'}
                  </button>
                )}
                {open === e.id && <Deliveries event={e} />}
              </td>
            )}
          </tr>
        ))}
      </tbody>
    </table>
  )
}

export function AlertsPage({ me }: { me: Me }) {
  const admin = can(me.role, 'admin')
  const metrics = useMetrics()
  const rules = useAlertRules()
  const { search } = useLocation()
  const fromChart = useMemo(() => {
    const text = new URLSearchParams(search).get('new')
    return text ? decodeStatistic(text).stat : null
  }, [search])
  const focus = useMemo(() => {
    const n = Number(new URLSearchParams(search).get('event'))
    return Number.isInteger(n) && n > 0 ? n : null
  }, [search])
  const bounds: Bounds = { top: rules.data?.top_elements ?? 0, maxOpen: rules.data?.max_open ?? 0 }
  const [editing, setEditing] = useState<{ rule: AlertRulePublic | null; draft: Draft; key: number } | null>(null)
  const [logRange, setLogRange] = useState<string>('-24h')
  const list = metrics.data?.metrics ?? []
  // a chart's bell opens the form once, on its statistic
  // a breakdown the rule cannot fire per element of (a histogram: a heat map's buckets) is left out
  const chartBy = fromChart?.by && perElementDims(list.find((m) => m.name === fromChart.metric)).includes(fromChart.by) ? fromChart.by : null
  const form = editing ?? (admin && fromChart && list.length ? { rule: null, draft: newDraft(fromChart.metric, fromChart.where, chartBy), key: 0 } : null)
  const close = () => {
    setEditing(null)
    if (fromChart) navigate('/alerts', { replace: true })
  }
  const active = openCount(rules.data?.rules)

  return (
    <main className="page admin-page">
      <div className="toolbar">
        <h1 className="ws-name">Alerts</h1>
        <span className="muted small" data-testid="alerts-open">
          {active ? `${active} open` : 'none open'}
        </span>
        {admin && list.length > 0 && (
          <button className="button button-primary" onClick={() => setEditing({ rule: null, draft: newDraft(list[0]!.name), key: Date.now() })} data-testid="alert-new">
            New alert
          </button>
        )}
      </div>
      {focus !== null && <EventFocus id={focus} onClose={() => navigate('/alerts', { replace: true })} />}
      {form && (
        <section className="panel" aria-label={form.rule ? 'Edit alert' : 'New alert'}>
          <div className="panel-head">
            <h2>{form.rule ? `Edit “${form.rule.name}”` : 'New alert'}</h2>
            <span className="muted small">checked every second, a few seconds behind now; changing a rule clears its open alerts and starts afresh</span>
          </div>
          <div className="admin-body">
            <RuleForm key={form.key} rule={form.rule} initial={form.draft} metrics={list} bounds={bounds} onDone={close} />
          </div>
        </section>
      )}
      <section className="panel" aria-label="Alert rules">
        <div className="panel-head">
          <h2>Rules</h2>
          {!admin && <span className="muted small">admins make and change alerts</span>}
        </div>
        <Rules admin={admin} onEdit={(r) => setEditing({ rule: r, draft: draftOf(r), key: Date.now() })} />
      </section>
      <section className="panel" aria-label="Alert log">
        <div className="panel-head">
          <h2>Log</h2>
          <div className="segmented small" role="group" aria-label="log range">
            {LOG_RANGES.map(([v, label]) => (
              <button key={v} className={logRange === v ? 'active' : ''} aria-pressed={logRange === v} onClick={() => setLogRange(v)}>
                {label}
              </button>
            ))}
          </div>
          <span className="muted small">alerts firing and clearing, agents connecting and disconnecting; click a webhook cell for its attempts</span>
        </div>
        <EventLog start={logRange} limit={500} focus={focus} />
      </section>
    </main>
  )
}
