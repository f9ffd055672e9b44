// Colours shared by charts and their legends: element i of a breakdown gets PALETTE[i].
export const PALETTE = [
  '#2f6fde', '#e8833a', '#3aa35b', '#d64550', '#8e63c9',
  '#1fa3a3', '#c9a227', '#d4609d', '#6b8e23', '#8c6d4f',
]
export const OTHER_COLOR = '#b7bdc7'
export const TOTAL_COLOR = '#2f6fde'

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
