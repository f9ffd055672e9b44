// The tile editor's form: a tile as text fields, and back to what PUT /status/tiles takes.
// The server checks the statistic and thresholds against the catalog; here only text becomes numbers.
import type { MetricPublic, TileSpec } from '../api/client'

export const MAX_TILES = 8

export interface TileDraft {
  id: string
  title: string
  metric: string
  by: string
  filters: string
  unit: string
  scale: string
  divideByCpus: boolean
  thresholds: string[]
}

/** Filters as typed: 'op=read; direction=in,out'. */
export function formatWhere(where: Record<string, string[]> | undefined): string {
  return Object.entries(where ?? {})
    .map(([k, v]) => `${k}=${v.join(',')}`)
    .join('; ')
}

export function parseWhere(text: string): Record<string, string[]> | string {
  const out: Record<string, string[]> = {}
  for (const part of text.split(/[;\n]/)) {
    if (!part.trim()) continue
    const eq = part.indexOf('=')
    const dim = part.slice(0, eq).trim()
    if (eq < 0 || !dim) return `cannot read ${JSON.stringify(part.trim())}: write dimension=value (values split by commas, filters by semicolons)`
    const values = part.slice(eq + 1).split(',').map((v) => v.trim()).filter(Boolean)
    if (!values.length) return `no value for ${dim}`
    out[dim] = [...(out[dim] ?? []), ...values.filter((v) => !out[dim]?.includes(v))]
  }
  return out
}

export function toDraft(t: TileSpec): TileDraft {
  return {
    id: t.id,
    title: t.title,
    metric: t.metric,
    by: t.by ?? '',
    filters: formatWhere(t.where),
    unit: t.unit,
    scale: String(t.scale ?? 1),
    divideByCpus: t.divide_by_cpus ?? false,
    thresholds: t.thresholds.map(String),
  }
}

/** A new tile's id: the first free tile1, tile2, … */
export function freeId(taken: string[]): string {
  for (let i = 1; ; i++) if (!taken.includes(`tile${i}`)) return `tile${i}`
}

/** The same tile on another metric: its unit, no breakdown or filters (they were the old metric's). */
export function withMetric(d: TileDraft, m: MetricPublic): TileDraft {
  return { ...d, metric: m.name, by: '', filters: '', unit: m.unit, scale: '1', divideByCpus: false, title: d.title || m.noun }
}

export function newDraft(m: MetricPublic, taken: string[]): TileDraft {
  const blank = { id: freeId(taken), title: '', metric: '', by: '', filters: '', unit: '', scale: '1', divideByCpus: false, thresholds: ['1', '10', '100', '1000'] }
  return withMetric(blank, m)
}

function number(text: string): number | null {
  const v = Number(text.trim())
  return text.trim() !== '' && Number.isFinite(v) ? v : null
}

/** The drafts as tiles, or the first field that is not a number or filter, named by tile and field. */
export function fromDrafts(drafts: TileDraft[]): { tiles: TileSpec[] } | { error: string } {
  const tiles: TileSpec[] = []
  for (const [i, d] of drafts.entries()) {
    const name = `Tile ${i + 1} (${d.title || d.id})`
    const where = parseWhere(d.filters)
    if (typeof where === 'string') return { error: `${name}, filters: ${where}` }
    const scale = number(d.scale)
    if (scale === null) return { error: `${name}, scale: ${JSON.stringify(d.scale)} is not a number` }
    const thresholds = d.thresholds.map(number)
    const bad = thresholds.findIndex((t) => t === null)
    if (bad >= 0) return { error: `${name}, threshold ${bad + 1}: ${JSON.stringify(d.thresholds[bad])} is not a number` }
    tiles.push({
      id: d.id,
      title: d.title.trim(),
      metric: d.metric,
      by: d.by || null,
      where,
      unit: d.unit.trim(),
      scale,
      divide_by_cpus: d.divideByCpus,
      thresholds: thresholds as number[],
    })
  }
  return { tiles }
}
