import { describe, expect, it } from 'vitest'
import { formatAmount, formatAxis, formatClock, formatLinkSpeed, formatRate, formatShare, formatTick, localToUnix, sig3, usageText } from './format'

describe('sig3', () => {
  it('keeps three significant digits and groups thousands', () => {
    expect(sig3(0)).toBe('0')
    expect(sig3(1.048576)).toBe('1.05')
    expect(sig3(12.345)).toBe('12.3')
    expect(sig3(333.3)).toBe('333')
    expect(sig3(2006.4)).toBe('2,006')
    expect(sig3(0.01234)).toBe('0.012')
  })
})

describe('formatAmount', () => {
  it('formats nanoseconds as the bucket labels read', () => {
    expect(formatAmount(2 ** 20, 'ns')).toBe('1.05 ms')
    expect(formatAmount(2 ** 10, 'ns')).toBe('1.02 µs')
    expect(formatAmount(512, 'ns')).toBe('512 ns')
    expect(formatAmount(2 ** 34, 'ns')).toBe('17.2 s')
  })
  it('formats bytes in binary units', () => {
    expect(formatAmount(8192, 'bytes')).toBe('8 KiB')
    expect(formatAmount(2 ** 24, 'bytes')).toBe('16 MiB')
    expect(formatAmount(100, 'bytes')).toBe('100 B')
  })
})

describe('formatRate', () => {
  it('formats each metric unit', () => {
    expect(formatRate(2006.2, 'ops/s')).toBe('2,006 ops/s')
    expect(formatRate(12_500_000, 'bytes/s')).toBe('12.5 MB/s')
    expect(formatRate(37.25, 'percent')).toBe('37.3 %')
    expect(formatRate(2_500_000, 'ops/s')).toBe('2.5M ops/s')
    expect(formatRate(null, 'ops/s')).toBe('–')
    expect(formatRate(Number.NaN, 'ops/s')).toBe('–')
  })
  it('formats axis ticks compactly', () => {
    expect(formatAxis(15000, 'ops/s')).toBe('15K')
    expect(formatAxis(2e9, 'bytes/s')).toBe('2 GB')
    expect(formatAxis(50, 'percent')).toBe('50%')
  })
})

describe('formatShare', () => {
  it('shows percent with one decimal and a floor', () => {
    expect(formatShare(0.25)).toBe('25.0 %')
    expect(formatShare(0.0004)).toBe('<0.1 %')
    expect(formatShare(0)).toBe('0.0 %')
  })
})

describe('time ticks', () => {
  it('show seconds, minutes, or the date as the range grows', () => {
    const t = new Date(2025, 10, 22, 14, 3, 7).getTime() / 1000
    expect(formatClock(t)).toBe('14:03:07')
    expect(formatTick(t, 600)).toBe('14:03:07')
    expect(formatTick(t, 86400)).toBe('14:03')
    expect(formatTick(t, 604800)).toBe('11-22 14:03')
  })
})

describe('localToUnix', () => {
  it('reads the browser local time', () => {
    expect(localToUnix('2026-11-24T10:00')).toBe(Math.floor(new Date(2026, 10, 24, 10, 0).getTime() / 1000))
  })
  it('is unbounded when empty and says so when unreadable', () => {
    expect(localToUnix('')).toBeNull()
    expect(localToUnix('not a time')).toBe('invalid')
  })
})

describe('usageText', () => {
  const G = 2 ** 30
  const u = { store_bytes: 1.5 * G, disk_free_bytes: 40 * G }
  it.each([
    [null, null, 'store 1.5 GiB · 40 GiB free · growth known after 10 minutes'],
    [0, null, 'store 1.5 GiB · 40 GiB free · not growing (retention keeps it level)'],
    [3.5 * G, 11.43, 'store 1.5 GiB · 40 GiB free · full in about 11 days (+3.5 GiB a day)'],
    [20 * G, 2, 'store 1.5 GiB · 40 GiB free · full in about 2.0 days (+20 GiB a day)'],
    [400 * G, 0.1, 'store 1.5 GiB · 40 GiB free · full in about 2 hours (+400 GiB a day)'],
  ])('growth %s, %s days', (g, d, want) => {
    expect(usageText({ ...u, store_growth_bytes_per_day: g, days_until_full: d })).toBe(want)
  })
})

describe('formatLinkSpeed', () => {
  it.each([
    [1.25e9, '10 Gbit/s'],
    [3.125e8, '2.5 Gbit/s'],
    [1.25e7, '100 Mbit/s'],
    [5e10, '400 Gbit/s'],
    [6.5e11, '5.2 Tbit/s'],
    [7000, '56 kbit/s'],
    [12, '96 bit/s'],
  ])('%d bytes/s', (v, text) => expect(formatLinkSpeed(v)).toBe(text))
})
