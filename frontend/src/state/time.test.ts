import { describe, expect, it } from 'vitest'
import { absolute, back, formatSpan, forward, parseSpan, showUnits, spanLabel, spanView, toNow, zoom } from './time'

const NOW = 1_800_000_000
const live = { range: '10m', paused: false, at: null }

describe('spans', () => {
  it.each([
    ['10m', 600], ['1h', 3600], ['90m', 5400], ['2d', 172800], ['1w', 604800], ['90s', 90], ['30d', 2592000],
  ])('%s is %d s', (text, s) => expect(parseSpan(text)).toBe(s))
  it.each(['', '10', '3y', '-1h', '1.5h', '59s', '53w', 'h', '10m;x'])('%j is not a span', (text) => expect(parseSpan(text)).toBeNull())
  it.each([
    [60, '1m'], [3600, '1h'], [5400, '90m'], [86400, '1d'], [1209600, '2w'], [2592000, '30d'], [5430, '5430s'],
  ])('%d s is named %s', (s, text) => {
    expect(formatSpan(s)).toBe(text)
    expect(parseSpan(text)).toBe(s)
  })
  it.each([
    [600, '10 minutes'], [3600, '1 hour'], [5400, '90 minutes'], [86400, '1 day'], [2592000, '30 days'], [1209600, '2 weeks'], [90, '90 seconds'],
  ])('%d s reads %s', (s, words) => expect(spanLabel(s)).toBe(words))
})

describe('toolbar moves', () => {
  it('shows one unit, and one more of it on shift-click', () => {
    expect(showUnits(live, 3600, false).range).toBe('1h')
    expect(showUnits({ ...live, range: '1h' }, 3600, true).range).toBe('2h')
    expect(showUnits({ ...live, range: '2h' }, 3600, true).range).toBe('3h')
    expect(showUnits({ ...live, range: '90m' }, 3600, true).range).toBe('1h') // not whole hours: start at one
    expect(showUnits(live, 30 * 86400, false).range).toBe('30d')
    expect(showUnits({ ...live, range: '30d' }, 30 * 86400, true).range).toBe('60d')
  })
  it('goes back a span from live, pausing where the range started', () => {
    expect(back(live, NOW)).toEqual({ range: '10m', paused: true, at: NOW - 2 - 600 })
    expect(back({ range: '1h', paused: true, at: 5000 }, NOW)).toEqual({ range: '1h', paused: true, at: 1400 })
  })
  it('goes forward a span, and live again once it reaches now', () => {
    expect(forward({ range: '10m', paused: true, at: NOW - 2000 }, NOW)).toEqual({ range: '10m', paused: true, at: NOW - 1400 })
    expect(forward({ range: '10m', paused: true, at: NOW - 300 }, NOW)).toEqual(live)
    expect(forward({ range: '10m', paused: true, at: NOW - 650 }, NOW)).toEqual(live) // ends 50 s ago: now, near enough
    expect(forward({ range: '10m', paused: true, at: NOW - 700 }, NOW)).toEqual({ range: '10m', paused: true, at: NOW - 100 })
    expect(forward(live, NOW)).toBe(live)
    expect(toNow({ range: '1h', paused: true, at: 5 })).toEqual({ range: '1h', paused: false, at: null })
  })
  it('zooms by halves and doubles within a minute and a year', () => {
    expect(zoom(live, 0.5).range).toBe('5m')
    expect(zoom(live, 2).range).toBe('20m')
    expect(zoom({ ...live, range: '1m' }, 0.5).range).toBe('1m')
    expect(zoom({ ...live, range: '3m' }, 0.5).range).toBe('2m') // whole minutes
    expect(zoom({ ...live, range: '30w' }, 2).range).toBe('366d')
    expect(zoom({ range: '1h', paused: true, at: 7 }, 2)).toEqual({ range: '2h', paused: true, at: 7 })
  })
  it('shows an absolute range paused at its end, or live when it ends now', () => {
    expect(absolute(live, NOW - 7200, NOW - 3600, NOW)).toEqual({ range: '1h', paused: true, at: NOW - 3600 })
    expect(absolute(live, NOW - 5430, NOW, NOW)).toEqual({ range: '5430s', paused: false, at: null })
  })
  it.each([
    [NOW - 100, NOW - 200, 'the end must be after the start'],
    [NOW + 10, NOW + 100, 'the range starts in the future'],
    [NOW - 100, NOW - 70, 'the range must be at least a minute'],
    [NOW - 400 * 86400, NOW, 'the range must be at most a year'],
  ])('refuses %d..%d: %s', (start, end, why) => expect(absolute(live, start, end, NOW)).toBe(why))
})

describe('spanView', () => {
  it('shows [start, end) paused at its end', () => {
    expect(spanView(NOW - 900, NOW)).toEqual({ range: '15m', paused: true, at: NOW })
    expect(spanView(NOW - 90, NOW)).toEqual({ range: '90s', paused: true, at: NOW })
  })
  it('has none shorter than a minute or longer than a year', () => {
    expect(spanView(NOW - 59, NOW)).toBe(null)
    expect(spanView(NOW - 367 * 86400, NOW)).toBe(null)
  })
})
