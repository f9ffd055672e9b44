// Retention and deletion, as the admin page shows and asks for them. Pure, so tested alone.
import { largestUnit } from './format'

export type Unit = 'hours' | 'days'
export const UNIT_SECONDS: Record<Unit, number> = { hours: 3600, days: 86400 }

/** Seconds as the largest whole unit: 172800 -> 2 days, 7200 -> 2 hours (whole hours always fit). */
export function toUnits(seconds: number): { n: number; unit: Unit } {
  return largestUnit(seconds, [['days', 86400], ['hours', 3600]])
}

export function describeKeep(seconds: number): string {
  const { n, unit } = toUnits(seconds)
  return `${n} ${n === 1 ? unit.slice(0, -1) : unit}`
}

const TIER_OF: Record<string, string> = { s_hot: 'seconds', s: 'seconds', k_s: '', m: 'minutes', k_m: '', k_t: '', h: 'hours', k_h: '' }

/** Rows by tier from the API's rows by table ('nfs_s_hot', 'disk_m', ...); the totals tables are
 * derived copies and not counted, so the figures are the statistics a user sees go. */
export function rowsByTier(rows: Record<string, number>): { seconds: number; minutes: number; hours: number } {
  const out = { seconds: 0, minutes: 0, hours: 0 }
  for (const [table, n] of Object.entries(rows)) {
    const suffix = table.slice(table.indexOf('_') + 1)
    const tier = TIER_OF[suffix]
    if (tier) out[tier as keyof typeof out] += n
  }
  return out
}

/** What a delete covers, in words: "nas1, 2026-11-24 10:00:00 to now". */
export function describeScope(host: string | null, start: number | null, end: number | null, fmt: (t: number) => string): string {
  const who = host ?? 'every host'
  if (start === null && end === null) return `all of ${who}'s statistics`
  return `${who}, ${start === null ? 'the beginning' : fmt(start)} to ${end === null ? 'now' : fmt(end)}`
}
