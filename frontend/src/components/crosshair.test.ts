import { describe, expect, it } from 'vitest'
import { columnAt } from './crosshair'

describe('columnAt', () => {
  const times = [100, 110, 120, 130]
  it.each([
    [99, null],
    [100, 0],
    [109, 0],
    [110, 1],
    [125, 2],
    [139, 3],
    [140, null],
  ])('second %d is in column %s', (ts, col) => expect(columnAt(times, ts)).toBe(col))
  it('has no column without times', () => expect(columnAt([], 100)).toBe(null))
  it('a single column spans one second', () => {
    expect(columnAt([100], 100)).toBe(0)
    expect(columnAt([100], 101)).toBe(null)
  })
})
