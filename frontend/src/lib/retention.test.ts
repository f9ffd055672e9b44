import { describe, expect, it } from 'vitest'
import { describeKeep, describeScope, rowsByTier, toUnits } from './retention'

describe('retention units', () => {
  it.each([
    [172800, { n: 2, unit: 'days' }, '2 days'],
    [86400, { n: 1, unit: 'days' }, '1 day'],
    [7200, { n: 2, unit: 'hours' }, '2 hours'],
    [90000, { n: 25, unit: 'hours' }, '25 hours'],
    [365 * 86400, { n: 365, unit: 'days' }, '365 days'],
  ])('%d s is %o (%s)', (s, units, words) => {
    expect(toUnits(s)).toEqual(units)
    expect(describeKeep(s)).toBe(words)
  })
})

describe('rowsByTier', () => {
  it('sums the tiers of every family and leaves the derived totals out', () => {
    const rows = { nfs_s_hot: 10, nfs_s: 5, nfs_k_s: 7, disk_s_hot: 3, nfs_m: 2, nfs_k_m: 9, nfs_k_t: 4, cpu_h: 1, cpu_k_h: 8 }
    expect(rowsByTier(rows)).toEqual({ seconds: 18, minutes: 2, hours: 1 })
  })
  it('is zero for nothing', () => {
    expect(rowsByTier({})).toEqual({ seconds: 0, minutes: 0, hours: 0 })
  })
})

describe('describeScope', () => {
  const fmt = (t: number) => `T${t}`
  it.each([
    ['nas1', null, null, "all of nas1's statistics"],
    [null, 100, 200, 'every host, T100 to T200'],
    ['nas1', null, 200, 'nas1, the beginning to T200'],
    ['nas1', 100, null, 'nas1, T100 to now'],
  ])('%s %s %s', (host, start, end, words) => {
    expect(describeScope(host, start, end, fmt)).toBe(words)
  })
})
