// Empty states that say why a chart is empty, from GET /api/v1/sources.
import type { SourceList } from '../api/client'

const FAMILY_LABEL: Record<string, string> = { nfs: 'NFS', disk: 'disk', cpu: 'CPU', net: 'network' }

export function familyLabel(family: string): string {
  return FAMILY_LABEL[family] ?? family
}

/** "cpu ✓ disk ✓ net ✓ nfs ✗" */
export function familySummary(sources: Pick<SourceList, 'families'>): string {
  return Object.keys(sources.families)
    .sort()
    .map((f) => `${f} ${sources.families[f] ? '✓' : '✗'}`)
    .join(' ')
}

/** Why a family has no active source: the reasons its sources give, else the backend's explanation. */
export function familyReason(sources: SourceList, family: string): string {
  const reasons = sources.sources
    .filter((s) => s.families.includes(family) && s.state !== 'active')
    .map((s) => s.reason || `${s.name} is ${s.state}`)
  const unique = [...new Set(reasons)]
  if (unique.length) return unique.join('; ')
  return sources.missing?.[family] || 'no agent reports it'
}

/** Whether every active source of a family is the synthetic demo. */
export function familyIsDemo(sources: SourceList | undefined, family: string): boolean {
  const active = sources?.sources.filter((s) => s.families.includes(family) && s.state === 'active') ?? []
  return active.length > 0 && active.every((s) => s.demo)
}

export interface EmptyState {
  title: string
  detail: string
}

export function emptyState(family: string, sources: SourceList | undefined): EmptyState {
  const label = familyLabel(family)
  if (!sources) return { title: `No ${label} traffic seen in this range.`, detail: '' }
  if (sources.families[family]) {
    return {
      title: `No ${label} traffic seen in this range.`,
      detail: `A ${label} source is active; the chart fills in as traffic arrives. Sources: ${familySummary(sources)}.`,
    }
  }
  return {
    title: `No ${label} traffic seen: no ${label} source is active on this host.`,
    detail: `Sources: ${familySummary(sources)} (${familyReason(sources, family)}).`,
  }
}
