// Alert rules as the form edits them, and in words. Pure; tested beside.
import type { AlertRuleBody, AlertRulePublic, EventPublic } from '../api/client'
import { largestUnit } from './format'

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

export function newDraft(metric: string, where: Record<string, string[]> = {}): Draft {
  return {
    name: '',
    metric,
    filters: formatFilters(where),
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

/** "above 50 ops/s for 5 min; clears after 1 min; Mon–Fri 09:00–17:00 (Europe/Berlin)". */
export function ruleText(r: Pick<AlertRulePublic, 'condition' | 'threshold' | 'unit' | 'hold_s' | 'clear_s' | 'repost_s' | 'days' | 'from_time' | 'to_time' | 'timezone'>): string {
  const parts = [`${r.condition} ${r.threshold.toLocaleString('en-US')} ${r.unit} for ${durationText(r.hold_s)}`, `clears after ${durationText(r.clear_s)}`]
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
