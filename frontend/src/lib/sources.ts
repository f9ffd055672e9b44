// The Sources page's pure helpers: state badges, cost cells, pending suspend/resume,
// agents with their sources, the families summary and the page's URL. Tested in sources.test.ts.
import type { SourceList, SourcePublic } from '../api/client'
import { queryPairs, safeDecode } from '../state/url'
import { formatAmount, formatBytes, formatShare, sig3 } from './format'

type Agent = NonNullable<SourceList['agents']>[number]

/** What the app shows where there is no value. */
export const NONE = '–'

/** An agent whose last report is older than this is stale (the backend turns its sources off after the same). */
export const STALE_AFTER_S = 15

// ------------------------------------------------------------------ state badge

export const STATES = ['active', 'standby', 'suspended', 'off', 'error'] as const
export type SourceState = (typeof STATES)[number]

export interface Badge {
  label: string
  icon: string
  /** CSS modifier: state-badge-<tone>. */
  tone: 'ok' | 'idle' | 'paused' | 'off' | 'bad'
  /** What the state means, for the badge's title. */
  meaning: string
}

const BADGES: Record<SourceState, Badge> = {
  active: { label: 'active', icon: '✓', tone: 'ok', meaning: 'collecting' },
  standby: { label: 'standby', icon: '◌', tone: 'idle', meaning: 'not collecting: another source measures the same' },
  suspended: { label: 'suspended', icon: '‖', tone: 'paused', meaning: 'detached by an operator; costs nothing until resumed' },
  off: { label: 'off', icon: '✗', tone: 'off', meaning: 'not collecting' },
  error: { label: 'error', icon: '!', tone: 'bad', meaning: 'failed' },
}

export function isSourceState(s: string): s is SourceState {
  return (STATES as readonly string[]).includes(s)
}

/** The badge of a state; a state this UI does not know is shown as it is, as a problem. */
export function stateBadge(state: string): Badge {
  return isSourceState(state) ? BADGES[state] : { label: state || 'unknown', icon: '?', tone: 'bad', meaning: 'unknown state' }
}

/** Whether a state needs no attention: collecting, covered by another source, or paused on purpose. */
export function isHealthy(state: string): boolean {
  return state === 'active' || state === 'standby' || state === 'suspended'
}

// ------------------------------------------------------------------ cost cells

export type Cost = Record<string, number>

export interface CostCell {
  text: string
  /** The value is worth a look (dropped or missed events, a nearly full map). */
  warn: boolean
}

export const COST_COLUMNS = [
  { key: 'events', label: 'events/s', help: 'BPF program runs in the last second (bpf_stats)' },
  { key: 'ns', label: 'ns/event', help: 'average BPF run time per event' },
  { key: 'cpu', label: 'BPF CPU', help: 'BPF run time in the last second, % of one CPU' },
  { key: 'fill', label: 'map fill', help: 'fill of the aggregation map at the last drain; full maps fold events into an overflow row' },
  { key: 'dropped', label: 'dropped', help: 'events that found the map full: last second / since the probe started' },
  { key: 'missed', label: 'missed', help: 'runs the kernel skipped (the program was already running on that CPU): last second / since start' },
] as const

export type CostKey = (typeof COST_COLUMNS)[number]['key']

/** A map this full is close to folding events into its overflow row. */
export const MAP_FILL_WARN = 0.8

function num(cost: Cost | null | undefined, key: string): number | null {
  const v = cost?.[key]
  return typeof v === 'number' && Number.isFinite(v) ? v : null
}

const none: CostCell = { text: NONE, warn: false }

function count(v: number): string {
  return sig3(Math.round(v))
}

function lastAndTotal(cost: Cost, last: string, total: string): CostCell {
  const l = num(cost, last)
  const t = num(cost, total)
  if (l === null && t === null) return none
  return { text: `${l === null ? NONE : count(l)} / ${t === null ? NONE : count(t)}`, warn: (l ?? 0) > 0 }
}

/** The cost columns of a source; every cell is "–" when the source reports no cost (not a BPF probe, or not active). */
export function costCells(cost: Cost | null | undefined): Record<CostKey, CostCell> {
  if (!cost) return { events: none, ns: none, cpu: none, fill: none, dropped: none, missed: none }
  const runs = num(cost, 'runs_per_s')
  const ns = num(cost, 'ns_per_run')
  const cpu = num(cost, 'bpf_cpu_pct')
  const fill = num(cost, 'map_fill')
  return {
    events: runs === null ? none : { text: sig3(runs), warn: false },
    // No runs in the last second: there is no time per run to show.
    ns: ns === null || !runs ? none : { text: formatAmount(ns, 'ns'), warn: false },
    cpu: cpu === null ? none : { text: formatPercent(cpu), warn: false },
    fill: fill === null ? none : { text: formatShare(fill), warn: fill >= MAP_FILL_WARN },
    dropped: lastAndTotal(cost, 'dropped', 'dropped_total'),
    missed: lastAndTotal(cost, 'missed', 'missed_total'),
  }
}

/** A percentage that is usually tiny: "0.333 %", "<0.001 %", "0 %". */
export function formatPercent(pct: number): string {
  if (pct > 0 && pct < 0.001) return '<0.001 %'
  return `${sig3(pct)} %`
}

/** Every number a source reports about its cost, for a tooltip: "drain_ms 0.54, map_fill 0.0009, …". */
export function costDetail(cost: Cost | null | undefined): string {
  if (!cost) return ''
  return Object.keys(cost)
    .sort()
    .map((k) => `${k} ${sig3(cost[k]!)}`)
    .join(', ')
}

// ------------------------------------------------------------------ suspend / resume

export type Action = 'suspend' | 'resume'

export interface ControlView {
  /** The request to send when the button is pressed, or null when the button is disabled. */
  action: Action | null
  label: string
  /** Why the button is disabled, or what pressing it does. */
  title: string
  pending: boolean
}

/** After this long the agent has not applied a request: offer to undo it instead of waiting for ever. */
export const PENDING_GIVE_UP_MS = 20_000

/**
 * What the agent is still to apply, from what an operator asked (`suspend_requested`)
 * and what the agent last reported (`state`). A source that is off or in error is
 * not running to be detached (and a stale agent applies nothing until it is back):
 * nothing is pending then, and the button offers to undo the request.
 */
export function pendingAction(s: Pick<SourcePublic, 'state' | 'suspend_requested'>): Action | null {
  if (s.suspend_requested && (s.state === 'active' || s.state === 'standby')) return 'suspend'
  if (!s.suspend_requested && s.state === 'suspended') return 'resume'
  return null
}

/**
 * The Suspend / Resume button of a source, or null for none: not suspendable, or off
 * or failed without a request to undo.
 * `sending`: the POST is in flight. `pendingForMs`: how long this page has seen the
 * agent not yet apply the request (0 when it just started).
 */
export function controlView(
  s: Pick<SourcePublic, 'state' | 'suspend_requested' | 'suspendable'>,
  sending: Action | null,
  pendingForMs = 0,
): ControlView | null {
  if (!s.suspendable) return null
  if (sending) return { action: null, label: sending === 'suspend' ? 'suspending…' : 'resuming…', title: 'sending the request', pending: true }
  const pending = pendingAction(s)
  if (pending && pendingForMs < PENDING_GIVE_UP_MS) {
    return {
      action: null,
      label: pending === 'suspend' ? 'suspending…' : 'resuming…',
      title: 'requested; the agent applies it within a few seconds',
      pending: true,
    }
  }
  const undo = pending ? `the agent has not applied the request for ${Math.round(pendingForMs / 1000)} s (see its log); ` : ''
  if (s.suspend_requested) {
    return { action: 'resume', label: 'Resume', title: `${undo}resume: the agent attaches the probe again`, pending: false }
  }
  // An off or failed probe runs nothing to detach (a resume the agent did not apply can still be undone).
  if (!pending && s.state !== 'active' && s.state !== 'standby') return null
  return { action: 'suspend', label: 'Suspend', title: `${undo}suspend: the agent detaches the probe, which then costs nothing`, pending: false }
}

/**
 * When this page first saw each source's request pending (browser ms), updated in
 * place from a fresh list: a request the agent applied, or that changed direction, starts over.
 */
export function trackPending(since: Map<string, { action: Action; at: number }>, sources: SourcePublic[], nowMs: number) {
  const seen = new Set<string>()
  for (const s of sources) {
    const action = pendingAction(s)
    if (!action) continue
    const key = sourceKey(s)
    seen.add(key)
    if (since.get(key)?.action !== action) since.set(key, { action, at: nowMs })
  }
  for (const key of [...since.keys()]) if (!seen.has(key)) since.delete(key)
  return since
}

/** The list with one source replaced by what a suspend/resume answer says of it. */
export function withSource(list: SourceList, updated: SourcePublic): SourceList {
  return {
    ...list,
    sources: list.sources.map((s) => (s.agent === updated.agent && s.name === updated.name ? updated : s)),
  }
}

export function sourceKey(s: Pick<SourcePublic, 'agent' | 'name'>): string {
  return `${s.agent}\u0000${s.name}`
}

// ------------------------------------------------------------------ agents

export interface AgentView {
  agent: string
  /** Null when this server has no report of the agent's own stats (e.g. since it restarted). */
  stats: Agent | null
  lastSeen: number
  stale: boolean
  sources: SourcePublic[]
}

/** Agents (from their stats, or only from their sources), sorted by id, each with its sources sorted by name. */
export function agentViews(list: SourceList, nowS: number): AgentView[] {
  const byAgent = new Map<string, AgentView>()
  const view = (agent: string): AgentView => {
    let v = byAgent.get(agent)
    if (!v) {
      v = { agent, stats: null, lastSeen: 0, stale: false, sources: [] }
      byAgent.set(agent, v)
    }
    return v
  }
  for (const a of list.agents ?? []) {
    const v = view(a.agent)
    v.stats = a
    v.lastSeen = Math.max(v.lastSeen, a.last_seen)
  }
  for (const s of list.sources) {
    const v = view(s.agent)
    v.sources.push(s)
    v.lastSeen = Math.max(v.lastSeen, s.last_seen)
  }
  const out = [...byAgent.values()].sort((a, b) => (a.agent < b.agent ? -1 : a.agent > b.agent ? 1 : 0))
  for (const v of out) {
    v.stale = nowS - v.lastSeen > STALE_AFTER_S
    v.sources.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  }
  return out
}

/** "now", "4 s ago", "3 min ago", "2 h ago", "5 d ago". */
export function formatAgo(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds))
  if (s < 2) return 'now'
  if (s < 120) return `${s} s ago`
  if (s < 7200) return `${Math.floor(s / 60)} min ago`
  if (s < 172800) return `${Math.floor(s / 3600)} h ago`
  return `${Math.floor(s / 86400)} d ago`
}

export interface AgentFigures {
  cpu: string
  rss: string
  queue: string
  dropped: string
  /** The agent's clock minus the server's, signed; and whether it is beyond the server's limit. */
  clock: string
  clockSkewed: boolean
}

export function agentFigures(stats: Agent | null): AgentFigures {
  const n = (v: number | null | undefined) => (typeof v === 'number' && Number.isFinite(v) ? v : null)
  const cpu = n(stats?.cpu_pct)
  const rss = n(stats?.rss_bytes)
  const qf = n(stats?.queue_frames)
  const qb = n(stats?.queue_bytes)
  const dropped = n(stats?.dropped_frames)
  const offset = n(stats?.clock_offset_s)
  return {
    cpu: cpu === null ? NONE : `${sig3(cpu)} %`,
    rss: rss === null ? NONE : formatBytes(rss),
    queue: qf === null ? NONE : `${sig3(qf)} frame${qf === 1 ? '' : 's'}${qb === null ? '' : ` (${formatBytes(qb)})`}`,
    dropped: dropped === null ? NONE : sig3(dropped),
    clock: offset === null ? NONE : `${offset > 0 ? '+' : offset < 0 ? '−' : ''}${sig3(Math.abs(offset))} s`,
    clockSkewed: !!stats?.clock_skewed,
  }
}

// ------------------------------------------------------------------ families

export interface FamilyRow {
  family: string
  ok: boolean
  /** Active sources feeding it when ok, else why it is empty. */
  detail: string
}

/** One row per family in the API's order; the reason when no source is active, else which sources feed it. */
export function familyRows(list: SourceList): FamilyRow[] {
  return Object.entries(list.families).map(([family, ok]) => {
    if (!ok) return { family, ok, detail: list.missing?.[family] || 'no active source' }
    const feeding = list.sources.filter((s) => s.state === 'active' && s.families.includes(family)).map((s) => s.name)
    return { family, ok, detail: [...new Set(feeding)].join(', ') }
  })
}

// ------------------------------------------------------------------ cost history (sparklines)

export interface CostSample {
  ts: number
  value: number
}

/** Samples kept per source: 2 minutes at one report a second. */
export const HISTORY_POINTS = 120

/**
 * Adds each active source's BPF CPU % at its report time to `history` (in place) and
 * returns it; a report already recorded (same time) is not added twice, and a
 * source that is not active leaves a gap.
 */
export function recordCosts(history: Map<string, CostSample[]>, sources: SourcePublic[], max = HISTORY_POINTS) {
  for (const s of sources) {
    const v = num(s.cost, 'bpf_cpu_pct')
    if (v === null) continue
    const key = sourceKey(s)
    const samples = history.get(key) ?? []
    const last = samples[samples.length - 1]
    if (last && last.ts >= s.last_seen) continue
    samples.push({ ts: s.last_seen, value: v })
    if (samples.length > max) samples.splice(0, samples.length - max)
    history.set(key, samples)
  }
  return history
}

// ------------------------------------------------------------------ the page's URL

export interface SourcesView {
  /** Show only this agent. */
  agent: string | null
  /** Show only sources in this state. */
  state: SourceState | null
}

export const EMPTY_SOURCES_VIEW: SourcesView = { agent: null, state: null }

/** `?agent=nas1%2Fprocfs&state=suspended`; decoding never throws and reports what it dropped. */
export function decodeSourcesView(search: string): { view: SourcesView; warnings: string[] } {
  const view: SourcesView = { ...EMPTY_SOURCES_VIEW }
  const warnings: string[] = []
  for (const [key, raw] of queryPairs(search)) {
    const value = safeDecode(raw)
    if (key === 'agent') {
      if (value) view.agent = value
      else warnings.push(`agent "${raw}" cannot be read; showing every agent`)
    } else if (key === 'state') {
      if (value !== null && isSourceState(value)) view.state = value
      else warnings.push(`state "${value ?? raw}" is not one of ${STATES.join(', ')}; showing every state`)
    }
  }
  return { view, warnings }
}

export function encodeSourcesView(view: SourcesView): string {
  const params: string[] = []
  if (view.agent) params.push(`agent=${encodeURIComponent(view.agent)}`)
  if (view.state) params.push(`state=${view.state}`)
  return params.length ? `?${params.join('&')}` : ''
}

/** The agents a view shows, each with only the sources it shows (agents left with none are dropped when filtering by state). */
export function filterAgents(agents: AgentView[], view: SourcesView): AgentView[] {
  return agents
    .filter((a) => !view.agent || a.agent === view.agent)
    .map((a) => (view.state ? { ...a, sources: a.sources.filter((s) => s.state === view.state) } : a))
    .filter((a) => !view.state || a.sources.length > 0)
}

/** How many sources are in each state, for the filter's labels. */
export function stateCounts(sources: SourcePublic[]): Record<SourceState, number> {
  const out: Record<SourceState, number> = { active: 0, standby: 0, suspended: 0, off: 0, error: 0 }
  for (const s of sources) if (isSourceState(s.state)) out[s.state] += 1
  return out
}
