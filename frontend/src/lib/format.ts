// Number formatting shared by charts, legends and tiles. Pure; tested in format.test.ts.

const grouped = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 })

/** 3 significant digits without trailing zeros: 1.05, 12.3, 333. */
export function sig3(v: number): string {
  if (v === 0) return '0'
  const abs = Math.abs(v)
  if (abs >= 1000) return grouped.format(v)
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3
  return String(Number(v.toFixed(digits)))
}

const DECIMAL: [number, string][] = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'K']]
const BINARY: [number, string][] = [[2 ** 40, 'TiB'], [2 ** 30, 'GiB'], [2 ** 20, 'MiB'], [2 ** 10, 'KiB']]
const NANOS: [number, string][] = [[1e9, 's'], [1e6, 'ms'], [1e3, 'µs']]

function scaled(v: number, steps: [number, string][], base: string, join = ' '): string {
  const abs = Math.abs(v)
  for (const [div, suffix] of steps) {
    if (abs >= div) return `${sig3(v / div)}${join}${suffix}`
  }
  return `${sig3(v)}${base ? join + base : ''}`
}

/** A value of a histogram's unit: 1048576 ns -> "1.05 ms", 8192 bytes -> "8 KiB". */
export function formatAmount(v: number, unit: string): string {
  if (unit === 'ns') return scaled(v, NANOS, 'ns')
  if (unit === 'bytes') return scaled(v, BINARY, 'B')
  return `${sig3(v)} ${unit}`
}

/** A per-second rate in a metric's unit: "2,006 ops/s", "12.5 MB/s", "37.2 %". */
export function formatRate(v: number | null | undefined, unit: string): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–'
  switch (unit) {
    case 'bytes/s':
      return scaled(v, DECIMAL.map(([d, s]) => [d, `${s}B/s`] as [number, string]), 'B/s')
    case 'percent':
    case '%':
      return `${sig3(v)} %`
    case 'ops/s':
    case 'packets/s':
      return Math.abs(v) >= 1e6 ? `${scaled(v, DECIMAL, '', '')} ${unit}` : `${sig3(v)} ${unit}`
    default:
      return `${sig3(v)} ${unit}`
  }
}

/** Short axis label for a rate: no unit, SI suffix. */
export function formatAxis(v: number, unit: string): string {
  if (unit === 'bytes/s') return scaled(v, DECIMAL.map(([d, s]) => [d, `${s}B`] as [number, string]), 'B')
  if (unit === 'percent') return `${sig3(v)}%`
  return scaled(v, DECIMAL, '', '')
}

/** A link's speed (bytes/s each way) as vendors write it, in bits: "10 Gbit/s", "2.5 Gbit/s", "100 Mbit/s". */
export function formatLinkSpeed(bytesPerS: number): string {
  return scaled(bytesPerS * 8, [[1e12, 'Tbit/s'], [1e9, 'Gbit/s'], [1e6, 'Mbit/s'], [1e3, 'kbit/s']], 'bit/s')
}

export function formatShare(share: number): string {
  if (!Number.isFinite(share)) return '–'
  const pct = share * 100
  if (pct > 0 && pct < 0.1) return '<0.1 %'
  return `${pct.toFixed(1)} %`
}

function pad2(n: number): string {
  return String(n).padStart(2, '0')
}

/** Local clock time of a unix second: "14:03:07". */
export function formatClock(unixSeconds: number): string {
  const d = new Date(unixSeconds * 1000)
  return `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`
}

/** A time-axis tick for a range of `spanSeconds`: "14:03:07", "14:03", or "11-22 14:00" beyond a day. */
export function formatTick(unixSeconds: number, spanSeconds: number): string {
  const d = new Date(unixSeconds * 1000)
  const hm = `${pad2(d.getHours())}:${pad2(d.getMinutes())}`
  if (spanSeconds > 86400) return `${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ${hm}`
  if (spanSeconds > 3600) return hm
  return formatClock(unixSeconds)
}

/** Local date and time of a unix second: "2025-11-22 14:03:07". */
export function formatDateTime(unixSeconds: number): string {
  const d = new Date(unixSeconds * 1000)
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ${formatClock(unixSeconds)}`
}

export function formatBytes(v: number): string {
  return formatAmount(v, 'bytes')
}

/** A unix second as a datetime-local value, in the browser's time zone (localToUnix's inverse). */
export function unixToLocalInput(unixSeconds: number): string {
  return formatDateTime(unixSeconds).replace(' ', 'T')
}

/** A datetime-local value (the browser's local time) as unix seconds; '' is none (null). */
export function localToUnix(value: string): number | null | 'invalid' {
  if (!value) return null
  const ms = new Date(value).getTime()
  return Number.isNaN(ms) ? 'invalid' : Math.floor(ms / 1000)
}

/** The status page's usage line: "store 1.2 GB · 40 GB free · full in about 12 days (+3.4 GB a day)". */
export function usageText(u: { store_bytes: number; disk_free_bytes: number; store_growth_bytes_per_day: number | null; days_until_full: number | null }): string {
  const base = `store ${formatBytes(u.store_bytes)} · ${formatBytes(u.disk_free_bytes)} free`
  const g = u.store_growth_bytes_per_day
  if (g === null) return `${base} · growth known after 10 minutes`
  if (u.days_until_full === null) return `${base} · not growing (retention keeps it level)`
  const days = u.days_until_full
  const when = days < 1 ? `in about ${Math.max(1, Math.round(days * 24))} hours` : `in about ${days < 10 ? days.toFixed(1) : Math.round(days).toLocaleString('en-US')} days`
  return `${base} · full ${when} (+${formatBytes(g)} a day)`
}

/** Seconds in the largest of `units` (largest first) that holds them whole, else in the last (smallest),
 * perhaps fractional: 300 -> 5 min of {h, min, s}; 5400 -> 1.5 hours of {days, hours}. */
export function largestUnit<U extends string>(seconds: number, units: readonly (readonly [U, number])[]): { n: number; unit: U } {
  const [unit, size] = units.find(([, size]) => seconds > 0 && seconds % size === 0) ?? units[units.length - 1]!
  return { n: seconds / size, unit }
}
