// Colours shared by charts and their legends, as CSS custom properties: styles.css defines each
// for the light and the dark theme, a legend's swatch uses it as it is, and the EChart wrapper
// resolves it for the canvas (and again when the theme changes).
import type { Theme } from '../lib/theme'

const cssVar = (name: string) => `var(--${name})`

/** Element i of a breakdown gets PALETTE[i]; each keeps 3:1 or better on a card in both themes. */
export const PALETTE = Array.from({ length: 10 }, (_, i) => cssVar(`series-${i + 1}`))
export const OTHER_COLOR = cssVar('series-other')
export const TOTAL_COLOR = cssVar('series-1')

/** A heat map's scale, a trickle to the busiest cell: darker is more on light, brighter on dark. */
export const HEAT_COLORS = Array.from({ length: 8 }, (_, i) => cssVar(`heat-${i + 1}`))
export const HEAT_HINT: Record<Theme, string> = { light: 'darker is more', dark: 'brighter is more' }

/** Chart furniture: axis text and lines, run annotations, a selected band, a hovered cell. */
export const CHART = {
  text: cssVar('chart-text'),
  axis: cssVar('chart-axis'),
  split: cssVar('chart-split'),
  markFill: cssVar('chart-mark-fill'),
  markLine: cssVar('chart-mark-line'),
  markText: cssVar('chart-mark-text'),
  alertFill: cssVar('chart-alert-fill'),
  alertLine: cssVar('chart-alert-line'),
  alertText: cssVar('chart-alert-text'),
  agentFill: cssVar('chart-agent-fill'),
  agentLine: cssVar('chart-agent-line'),
  minmax: cssVar('chart-minmax'),
  bandFill: cssVar('chart-band-fill'),
  bandLine: cssVar('chart-band-line'),
  cellLine: cssVar('chart-cell-line'),
} as const

export function colorOf(i: number): string {
  return PALETTE[i % PALETTE.length] ?? OTHER_COLOR
}

/** How a breakdown element reads: the API's empty key is "(none)". */
export function elementLabel(key: string): string {
  return key === '' ? '(none)' : key
}

/** Shorten a long label in the middle, keeping its distinctive end: "/export/med…/d3/41/9/60". */
export function middleEllipsis(label: string, max = 28): string {
  if (label.length <= max) return label
  const tail = Math.ceil((max - 1) * 0.6)
  return `${label.slice(0, max - 1 - tail)}…${label.slice(label.length - tail)}`
}
