import { describe, expect, it } from 'vitest'
import { parseChoice, resolveTheme, resolveVars } from './theme'

describe('theme', () => {
  it('reads a stored choice, anything unknown following the system', () => {
    expect(parseChoice('dark')).toBe('dark')
    expect(parseChoice('light')).toBe('light')
    for (const raw of [null, undefined, '', 'system', 'DARK', 'blue']) expect(parseChoice(raw)).toBe('system')
  })

  it('resolves "system" by the system preference, and a fixed choice regardless of it', () => {
    expect(resolveTheme('system', true)).toBe('dark')
    expect(resolveTheme('system', false)).toBe('light')
    expect(resolveTheme('light', true)).toBe('light')
    expect(resolveTheme('dark', false)).toBe('dark')
  })
})

describe('resolveVars', () => {
  const vars: Record<string, string> = { '--a': '#111111', '--b': 'rgba(1, 2, 3, 0.5)' }
  const lookup = (name: string) => vars[name] ?? ''

  it('replaces var(--x) strings at any depth, and leaves the rest', () => {
    const formatter = (v: number) => `${v}`
    const option = {
      xAxis: { axisLabel: { color: 'var(--a)', formatter }, name: 'var' },
      visualMap: { inRange: { color: ['var(--a)', 'var(--b)', '#fff'] } },
      series: [{ color: ' var(--b) ', markArea: { itemStyle: { color: 'var(--a)' }, data: [[{ xAxis: 1, itemStyle: { color: 'var(--b)' } }, { xAxis: 2 }]] } }],
      missing: 'var(--nope)',
      n: 3,
      off: null,
    }
    const out = resolveVars(option, lookup)
    expect(out).toEqual({
      xAxis: { axisLabel: { color: '#111111', formatter }, name: 'var' },
      visualMap: { inRange: { color: ['#111111', 'rgba(1, 2, 3, 0.5)', '#fff'] } },
      series: [{ color: 'rgba(1, 2, 3, 0.5)', markArea: { itemStyle: { color: '#111111' }, data: [[{ xAxis: 1, itemStyle: { color: 'rgba(1, 2, 3, 0.5)' } }, { xAxis: 2 }]] } }],
      missing: 'var(--nope)', // undefined: left for the chart's default
      n: 3,
      off: null,
    })
    expect(option.xAxis.axisLabel.color).toBe('var(--a)') // the option itself is not changed
  })

  it('passes points through as they are, without copying them', () => {
    const data = [[1, 2], [3, 4]]
    const labels = ['var(--a)', '12:00']
    const out = resolveVars({ series: [{ data }], xAxis: { data: labels } }, lookup)
    expect(out.series[0]!.data).toBe(data)
    expect(out.xAxis.data).toBe(labels) // category names are text, not colours
  })
})
