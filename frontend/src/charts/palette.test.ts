import { describe, expect, it } from 'vitest'
import css from '../styles.css?raw'
import { CHART, colorOf, elementLabel, HEAT_COLORS, middleEllipsis, OTHER_COLOR, PALETTE, TOTAL_COLOR } from './palette'

// The custom properties each theme defines, read from the stylesheet itself.
function block(selector: string): Map<string, string> {
  const start = css.indexOf(`${selector} {`)
  if (start < 0) throw new Error(`no ${selector} block in styles.css`)
  const body = css.slice(start, css.indexOf('\n}', start))
  return new Map([...body.matchAll(/(--[\w-]+):\s*([^;]+);/g)].map((m) => [m[1]!, m[2]!.trim()]))
}
const light = block(':root')
const themes = { light, dark: new Map([...light, ...block(":root[data-theme='dark']")]) }

type RGBA = [number, number, number, number]
function parse(color: string): RGBA {
  const hex = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(color)
  if (hex) {
    const h = hex[1]!.length === 3 ? [...hex[1]!].map((c) => c + c).join('') : hex[1]!
    return [0, 2, 4].map((i) => parseInt(h.slice(i, i + 2), 16)).concat(1) as RGBA
  }
  const rgba = /^rgba?\(([^)]+)\)$/.exec(color)
  if (rgba) {
    const [r, g, b, a = 1] = rgba[1]!.split(',').map(Number)
    return [r!, g!, b!, a]
  }
  throw new Error(`cannot read the colour ${color}`)
}
/** A colour drawn over an opaque one. */
const over = (top: RGBA, under: RGBA): RGBA => [0, 1, 2].map((i) => top[i]! * top[3] + under[i]! * (1 - top[3])).concat(1) as RGBA
function luminance([r, g, b]: RGBA): number {
  const lin = (c: number) => (c / 255 <= 0.03928 ? c / 255 / 12.92 : ((c / 255 + 0.055) / 1.055) ** 2.4)
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)
}
/** WCAG contrast ratio of a colour (maybe translucent) on an opaque background. */
function contrast(fg: RGBA, bg: RGBA): number {
  const [a, b] = [luminance(over(fg, bg)), luminance(bg)]
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)
}

const varName = (ref: string) => /^var\((--[\w-]+)\)$/.exec(ref)![1]!

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

describe.each(Object.entries(themes))('the %s theme', (_name, vars) => {
  const color = (name: string): RGBA => {
    const v = vars.get(name)
    if (v === undefined) throw new Error(`${name} is not defined`)
    return parse(v)
  }
  const panel = color('--panel')

  it('defines every custom property the stylesheet and the charts use', () => {
    const used = new Set([...css.matchAll(/var\((--[\w-]+)\)/g)].map((m) => m[1]!))
    for (const ref of [...PALETTE, OTHER_COLOR, TOTAL_COLOR, ...HEAT_COLORS, ...Object.values(CHART)]) used.add(varName(ref))
    expect([...used].filter((n) => !vars.has(n))).toEqual([])
  })

  it('draws series that stand out from a card, and apart from each other', () => {
    const series = PALETTE.map((ref) => color(varName(ref)))
    for (const [i, c] of series.entries()) expect(contrast(c, panel), `series ${i + 1}`).toBeGreaterThanOrEqual(3)
    expect(new Set(PALETTE.map((ref) => vars.get(varName(ref)))).size).toBe(PALETTE.length)
    expect(contrast(color('--series-other'), panel)).toBeGreaterThanOrEqual(1.5) // "other" is quiet on purpose, yet visible
  })

  it('shades a heat map from a trickle to the busiest cell, more standing out more', () => {
    const steps = HEAT_COLORS.map((ref) => contrast(color(varName(ref)), panel))
    for (let i = 1; i < steps.length; i++) expect(steps[i], `heat step ${i + 1}`).toBeGreaterThan(steps[i - 1]!)
    expect(steps.at(-1)).toBeGreaterThanOrEqual(7)
  })

  it('keeps chart text and marks readable on a card', () => {
    expect(contrast(color('--chart-text'), panel)).toBeGreaterThanOrEqual(4.5)
    // a run's label sits on its shaded span
    expect(contrast(color('--chart-mark-text'), over(color('--chart-mark-fill'), panel))).toBeGreaterThanOrEqual(4.5)
    expect(contrast(color('--chart-band-line'), panel)).toBeGreaterThanOrEqual(3)
    expect(contrast(color('--chart-axis'), panel)).toBeGreaterThanOrEqual(1.5)
  })

  it('keeps text readable on each background it is set on', () => {
    const pairs: [string, string][] = [
      ['--ink', '--bg'], ['--ink', '--panel'], ['--ink-2', '--panel'], ['--ink-2', '--subtle'], ['--muted', '--bg'], ['--muted', '--panel'],
      ['--muted', '--subtle'], ['--accent', '--panel'], ['--accent', '--bg'], ['--accent-strong', '--accent-2'], ['--accent-ink', '--accent-bg'],
      ['--ok', '--panel'], ['--bad', '--panel'], ['--warn', '--panel'], ['--ok-ink', '--ok-bg'], ['--warn-ink', '--warn-bg'],
      ['--bad-ink', '--bad-bg'], ['--violet-ink', '--violet-bg'], ['--header-ink', '--header'], ['--header-muted', '--header'],
      ['--pill-ok-ink', '--pill-ok-bg'], ['--pill-warn-ink', '--pill-warn-bg'], ['--ink', '--row-hover'], ['--ink', '--input-bg'],
    ]
    const low = pairs.map(([fg, bg]) => [fg, bg, contrast(color(fg), color(bg))] as const).filter(([, , r]) => r < 4.5)
    expect(low).toEqual([])
  })
})
