import { describe, expect, it } from 'vitest'
import { colorOf, elementLabel, middleEllipsis, OTHER_COLOR, PALETTE } from './palette'

describe('palette', () => {
  it('cycles colours and names the empty element', () => {
    expect(colorOf(0)).toBe(PALETTE[0])
    expect(colorOf(PALETTE.length)).toBe(PALETTE[0])
    expect(OTHER_COLOR).not.toBe(PALETTE[0])
    expect(elementLabel('')).toBe('(none)')
    expect(elementLabel('10.0.0.7')).toBe('10.0.0.7')
  })

  it('shortens long labels in the middle', () => {
    expect(middleEllipsis('10.0.0.7')).toBe('10.0.0.7')
    const s = middleEllipsis('/export/media/d3/41/9/60/some-long-file-name.mkv', 28)
    expect(s).toHaveLength(28)
    expect(s.startsWith('/export/')).toBe(true)
    expect(s.endsWith('file-name.mkv')).toBe(true)
    expect(s).toContain('…')
  })
})
