import { describe, expect, it } from 'vitest'
import { decodeWorksheet, EMPTY_WORKSHEET, makeStatistic } from '../state/url'
import { editableCopy, shareLink } from './share'

const ws = { ...EMPTY_WORKSHEET, statistics: [makeStatistic('nfs.ops', 'client')], id: 'w1', name: 'Mine' }
const NOW = 1_800_000_000_500

describe('share links', () => {
  it('a live view stays live, read-only', () => {
    const link = shareLink('http://nas:8470', ws, false, NOW)
    expect(link).toBe('http://nas:8470/?ws=w1&name=Mine&ro=1&s=nfs.ops;by:client')
    const { state, warnings } = decodeWorksheet(link.slice(link.indexOf('?')))
    expect(warnings).toEqual([])
    expect(state).toEqual({ ...ws, readOnly: true })
  })
  it('freezing pauses at the newest complete second; a paused view keeps its own moment', () => {
    expect(shareLink('', ws, true, NOW)).toBe(`/?ws=w1&name=Mine&ro=1&paused=1&at=${1_800_000_000 - 2}&s=nfs.ops;by:client`)
    const paused = { ...ws, paused: true, at: 1_700_000_000 }
    expect(shareLink('', paused, true, NOW)).toContain('paused=1&at=1700000000')
  })
  it('editing makes a copy that cannot overwrite the shared worksheet', () => {
    expect(editableCopy({ ...ws, readOnly: true })).toEqual({ ...ws, id: null, readOnly: false })
  })
})
