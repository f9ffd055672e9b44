// Alert rules as the form edits them, and in words. Pure; tested beside.
import type { AlertRuleBody, AlertRulePublic, EventPublic, MetricPublic } from '../api/client'
import { largestUnit } from './format'
import { addressOf, elementName, type Names } from './names'

export const DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const
export type Day = (typeof DAYS)[number]
export type DurationUnit = 's' | 'min' | 'h'
export const DURATION_SECONDS: Record<DurationUnit, number> = { s: 1, min: 60, h: 3600 }

export interface Duration {
  n: number
  unit: DurationUnit
}

/** The largest unit that states `seconds` exactly: 300 -> 5 min, 90 -> 90 s. */
export function toDuration(seconds: number): Duration {
  return largestUnit(seconds, [['h', 3600], ['min', 60], ['s', 1]])
}

export function durationSeconds(d: Duration): number {
  return Math.round(d.n * DURATION_SECONDS[d.unit])
}

export function durationText(seconds: number): string {
  const d = toDuration(seconds)
  return `${d.n} ${d.unit}`
}

/** Filters as typed: "op=read client=10.0.0.7,10.0.0.8" (spaces or semicolons between filters). */
export function parseFilters(text: string): { where: Record<string, string[]> } | { error: string } {
  const where: Record<string, string[]> = {}
  for (const part of text.split(/[;\s]+/).filter(Boolean)) {
    const eq = part.indexOf('=')
    const dim = eq > 0 ? part.slice(0, eq) : ''
    const values = eq > 0 ? part.slice(eq + 1).split(',').filter(Boolean) : []
    if (!dim || !values.length) return { error: `cannot read filter "${part}": write dim=value or dim=v1,v2` }
    where[dim] = [...(where[dim] ?? []), ...values]
  }
  return { where }
}

export function formatFilters(where: Record<string, string[]>): string {
  return Object.entries(where)
    .map(([d, v]) => `${d}=${v.join(',')}`)
    .join(' ')
}

export interface Draft {
  name: string
  metric: string
  filters: string
  /** A dimension to fire per element of; '' for the total. */
  by: string
  condition: 'above' | 'below'
  threshold: string
  hold: Duration
  clear: Duration
  repost: Duration
  days: Day[]
  hours: boolean
  from: string
  to: string
  timezone: string
  webhook: string
  /** null: keep the secret set (on an edit); '' removes it. */
  secret: string | null
  enabled: boolean
}

export function newDraft(metric: string, where: Record<string, string[]> = {}, by: string | null = null): Draft {
  return {
    name: '',
    metric,
    filters: formatFilters(where),
    by: by ?? '',
    condition: 'above',
    threshold: '',
    hold: { n: 5, unit: 'min' },
    clear: { n: 1, unit: 'min' },
    repost: { n: 0, unit: 'min' },
    days: [...DAYS],
    hours: false,
    from: '09:00',
    to: '17:00',
    timezone: '',
    webhook: '',
    secret: '',
    enabled: true,
  }
}

export function draftOf(r: AlertRulePublic): Draft {
  return {
    name: r.name,
    metric: r.metric,
    filters: formatFilters(r.where),
    by: r.by ?? '',
    condition: r.condition,
    threshold: String(r.threshold),
    hold: toDuration(r.hold_s),
    clear: toDuration(r.clear_s),
    repost: toDuration(r.repost_s),
    days: [...r.days],
    hours: r.from_time != null,
    from: r.from_time ?? '09:00',
    to: r.to_time ?? '17:00',
    timezone: r.timezone ?? '',
    webhook: r.webhook ?? '',
    secret: null,
    enabled: r.enabled,
  }
}

/** The request body, or the first thing the form must fix (the server checks everything again). */
export function bodyOf(d: Draft): { body: AlertRuleBody } | { error: string } {
  const f = parseFilters(d.filters)
  if ('error' in f) return f
  const threshold = Number(d.threshold)
  if (d.threshold.trim() === '' || !Number.isFinite(threshold)) return { error: 'threshold must be a number' }
  if (!d.name.trim()) return { error: 'give the alert a name' }
  const body: AlertRuleBody = {
    name: d.name.trim(),
    metric: d.metric,
    where: f.where,
    by: d.by || null,
    condition: d.condition,
    threshold,
    hold_s: durationSeconds(d.hold),
    clear_s: durationSeconds(d.clear),
    repost_s: durationSeconds(d.repost),
    days: d.days,
    from_time: d.hours ? d.from : null,
    to_time: d.hours ? d.to : null,
    timezone: d.timezone.trim() || null,
    webhook: d.webhook.trim() || null,
    enabled: d.enabled,
  }
  if (d.secret !== null) body.secret = d.secret
  return { body }
}

const DAY_NAMES: Record<Day, string> = { mon: 'Mon', tue: 'Tue', wed: 'Wed', thu: 'Thu', fri: 'Fri', sat: 'Sat', sun: 'Sun' }

/** "Mon–Fri", "Sat, Sun", "every day". */
export function daysText(days: readonly string[]): string {
  if (days.length === 7) return 'every day'
  const idx = DAYS.map((d, i) => (days.includes(d) ? i : -1)).filter((i) => i >= 0)
  const runs: string[] = []
  for (let k = 0; k < idx.length; ) {
    let j = k
    while (j + 1 < idx.length && idx[j + 1] === idx[j]! + 1) j++
    const a = DAY_NAMES[DAYS[idx[k]!]!]
    const b = DAY_NAMES[DAYS[idx[j]!]!]
    runs.push(j - k >= 2 ? `${a}–${b}` : j > k ? `${a}, ${b}` : a)
    k = j + 1
  }
  return runs.join(', ')
}

/** "above 50 ops/s for 5 min; clears after 1 min; Mon–Fri 09:00–17:00 (Europe/Berlin)"; per element,
 * "any client above 50 ops/s for 5 min; ...". */
export function ruleText(r: Pick<AlertRulePublic, 'condition' | 'threshold' | 'unit' | 'hold_s' | 'clear_s' | 'repost_s' | 'days' | 'from_time' | 'to_time' | 'timezone'> & { by?: string | null }): string {
  const who = r.by ? `any ${dimNoun(r.by)} ` : ''
  const parts = [`${who}${r.condition} ${r.threshold.toLocaleString('en-US')} ${r.unit} for ${durationText(r.hold_s)}`, `clears after ${durationText(r.clear_s)}`]
  if (r.repost_s) parts.push(`reposts every ${durationText(r.repost_s)}`)
  const when = [r.days.length < 7 || r.from_time ? daysText(r.days) : '', r.from_time ? `${r.from_time}–${r.to_time}` : ''].filter(Boolean).join(' ')
  if (when) parts.push(`${when}${r.timezone ? ` (${r.timezone})` : ''}`)
  return parts.join('; ')
}

export const KIND_TEXT: Record<EventPublic['kind'], string> = {
  'alert.fired': 'fired',
  'alert.reposted': 'still firing',
  'alert.cleared': 'cleared',
  'alert.test': 'test post',
  'agent.connected': 'agent connected',
  'agent.disconnected': 'agent disconnected',
}

/** A webhook post's state in words: "delivered", "retrying (2 attempts)", "failed after 5 attempts". */
export function deliveryText(e: Pick<EventPublic, 'delivery' | 'attempts'>): string {
  const n = `${e.attempts} attempt${e.attempts === 1 ? '' : 's'}`
  switch (e.delivery) {
    case 'none':
      return ''
    case 'delivered':
      return e.attempts > 1 ? `delivered after ${n}` : 'delivered'
    case 'pending':
      return e.attempts ? `retrying (${n} failed)` : 'sending'
    case 'failed':
      return `failed after ${n}`
  }
}

/** Alerts open now over all rules: each element of a per-element rule counts. */
export function openCount(rules: Pick<AlertRulePublic, 'state'>[] | undefined): number {
  return (rules ?? []).reduce((n, r) => n + r.state.open_count, 0)
}

/**
 * What a per-element rule's bounds mean for it, in words: "checks the 20 busiest clients each
 * second; at most 10 open at once; 3 withheld now (5 since saved)". Empty for a rule on the total.
 */
export function boundsText(r: Pick<AlertRulePublic, 'by' | 'condition' | 'state'>, topElements: number, maxOpen: number): string {
  if (!r.by) return ''
  const parts = [`checks the ${topElements} busiest ${plural(r.by)} each second${r.condition === 'below' ? ' (and those falling out of them)' : ''}`, `at most ${maxOpen} open at once`]
  const s = r.state
  if (s.withheld || s.withheld_total) parts.push(`${s.withheld} withheld now (${s.withheld_total} since saved)`)
  return parts.join('; ')
}

// As the catalog's phrases say them (catalog.DIM_PHRASE): "type read", "protocol v3", "CPU 3".
const NOUNS: Record<string, [string, string]> = { op: ['type', 'types'], proto: ['protocol', 'protocols'], cpu: ['CPU', 'CPUs'], port: ['local port', 'local ports'] }

/** A dimension's element as a noun: "client", "type" (op), "CPU". */
export function dimNoun(dim: string): string {
  return NOUNS[dim]?.[0] ?? dim
}

function plural(dim: string): string {
  return NOUNS[dim]?.[1] ?? (dim.endsWith('s') ? `${dim}es` : `${dim}s`)
}

/** The breakdowns a rule of `metric` may fire per element of: its dimensions, not its histograms. */
export function perElementDims(m: Pick<MetricPublic, 'dimensions' | 'histograms'> | undefined): string[] {
  const hist = new Set((m?.histograms ?? []).map((h) => h.name))
  return (m?.dimensions ?? []).filter((d) => !hist.has(d))
}

/** An alert event's title: the rule's name, and for a per-element rule its element, a client by
 * its name ("busy: client nfs-a"). */
export function eventTitle(e: Pick<EventPublic, 'label' | 'dim' | 'element'>, names?: Names): string {
  return e.element == null ? e.label : `${e.label}: ${dimNoun(e.dim ?? '')} ${elementName(e.dim, e.element, names)}`
}

/**
 * An event's message in pieces, its client element by name: the server writes the element as
 * "client 10.0.0.7"; a named client reads "client nfs-a" with the address on hover (`address`).
 */
export function messageParts(e: Pick<EventPublic, 'message' | 'dim' | 'element'>, names?: Names): { text: string; address?: string }[] {
  const address = e.element != null ? addressOf(e.dim, e.element, names) : null
  const phrase = `${e.dim} ${e.element}`
  const at = address ? e.message.indexOf(phrase) : -1
  if (!address || at < 0) return [{ text: e.message }]
  return [
    { text: e.message.slice(0, at + e.dim!.length + 1) },
    { text: names![address]!, address },
    { text: e.message.slice(at + phrase.length) },
  ].filter((p) => p.text !== '')
}
