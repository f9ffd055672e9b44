import { describe, expect, it } from 'vitest'
import type { SourceList } from '../api/client'
import { emptyState, familyIsDemo, familySummary } from './empty'

const src = (name: string, families: string[], state: string, reason: string, demo = false) => ({
  agent: 'local',
  name,
  host: 'nas1',
  families,
  state,
  reason,
  demo,
  last_seen: 0,
  suspendable: false,
  suspend_requested: false,
})

const sources: SourceList = {
  sources: [
    src('procfs', ['cpu', 'disk', 'net'], 'active', ''),
    src('nfsd-bpf', ['nfs'], 'unavailable', 'needs the BPF agent'),
  ],
  families: { nfs: false, cpu: true, net: true, disk: true },
}

describe('empty states', () => {
  it('say which source is missing and why', () => {
    expect(familySummary(sources)).toBe('cpu ✓ disk ✓ net ✓ nfs ✗')
    expect(emptyState('nfs', sources)).toEqual({
      title: 'No NFS traffic seen: no NFS source is active on this host.',
      detail: 'Sources: cpu ✓ disk ✓ net ✓ nfs ✗ (needs the BPF agent).',
    })
  })

  it('name a family no agent reports', () => {
    const none = { ...sources, sources: [sources.sources[0]!] }
    expect(emptyState('nfs', none).detail).toBe('Sources: cpu ✓ disk ✓ net ✓ nfs ✗ (no agent reports it).')
  })

  it("use the backend's explanation when no source names the family", () => {
    const none = { ...sources, sources: [sources.sources[0]!], missing: { nfs: 'needs the BPF agent' } }
    expect(emptyState('nfs', none).detail).toBe('Sources: cpu ✓ disk ✓ net ✓ nfs ✗ (needs the BPF agent).')
  })

  it('tell an idle active source from a missing one', () => {
    expect(emptyState('disk', sources).title).toBe('No disk traffic seen in this range.')
    expect(emptyState('disk', sources).detail).toMatch(/source is active/)
  })

  it('spot demo-only families', () => {
    const demo: SourceList = { ...sources, sources: [...sources.sources, src('demo-nas', ['nfs'], 'active', '', true)] }
    expect(familyIsDemo(demo, 'nfs')).toBe(true)
    expect(familyIsDemo(demo, 'cpu')).toBe(false)
    expect(familyIsDemo(undefined, 'nfs')).toBe(false)
  })
})
