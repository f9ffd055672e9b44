// CSV for spreadsheets. Element names (file paths, client names) come from the network: a cell
// is quoted when it holds a separator, quote or line break, and one that a spreadsheet would
// run as a formula (= + - @ tab CR) is prefixed with ' (OWASP's CSV injection advice).

export function csvCell(v: string | number | null | undefined): string {
  if (v === null || v === undefined) return ''
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : ''
  const safe = /^[=+\-@\t\r]/.test(v) ? `'${v}` : v
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe
}

export function csvLines(rows: Array<Array<string | number | null | undefined>>): string {
  return rows.map((r) => r.map(csvCell).join(',')).join('\r\n') + '\r\n'
}

/** A name for a downloaded file: the title's words joined by '-', nothing a file system minds. */
export function fileName(title: string, ext: string): string {
  const base = title.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 80) || 'loupe'
  return `${base}.${ext}`
}
