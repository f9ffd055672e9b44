// A worksheet as a file: exported as JSON, imported back with every field checked, since a
// file can hold anything. Import never throws: a file it cannot read gives an error that says
// why, and parts it cannot use are reported as warnings.
import { DISPLAYS, EMPTY_WORKSHEET, fromSaved, MAX_STATISTICS, toWorksheetBody, type WorksheetState } from './url'

export const FORMAT = 'loupe-worksheet'
export const VERSION = 1

export function worksheetFile(ws: WorksheetState, name: string): string {
  return JSON.stringify({ format: FORMAT, version: VERSION, ...toWorksheetBody(ws, name) }, null, 2) + '\n'
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

export function readWorksheetFile(text: string): { state: WorksheetState; warnings: string[] } | { error: string } {
  let doc: unknown
  try {
    doc = JSON.parse(text)
  } catch {
    return { error: 'the file is not JSON' }
  }
  if (!isObj(doc) || doc.format !== FORMAT) return { error: `the file is not a Loupe worksheet (no "format": "${FORMAT}")` }
  if (doc.version !== VERSION) return { error: `the file is version ${String(doc.version)} of the format; this Loupe reads version ${VERSION}` }
  const warnings: string[] = []
  const name = typeof doc.name === 'string' && doc.name.trim() ? doc.name.trim().slice(0, 200) : 'Imported worksheet'
  const raw = Array.isArray(doc.statistics) ? doc.statistics : []
  if (!Array.isArray(doc.statistics)) warnings.push('the file has no statistics list')
  const statistics = []
  for (const [i, s] of raw.entries()) {
    if (statistics.length >= MAX_STATISTICS) {
      warnings.push(`more than ${MAX_STATISTICS} statistics; the rest were left out`)
      break
    }
    const where = isObj(s) && isObj(s.where) ? s.where : {}
    const whereOk = Object.values(where).every((v) => Array.isArray(v) && v.every((x) => typeof x === 'string'))
    if (!isObj(s) || typeof s.metric !== 'string' || !s.metric || (s.by != null && typeof s.by !== 'string') || !whereOk) {
      warnings.push(`statistic ${i + 1} cannot be read; it was left out`)
      continue
    }
    const top = Number.isInteger(s.top) && (s.top as number) >= 1 && (s.top as number) <= 100 ? (s.top as number) : undefined
    if (s.top !== undefined && top === undefined) warnings.push(`top of ${s.metric} is not a whole number 1..100; using 10`)
    const display = typeof s.display === 'string' && (DISPLAYS as readonly string[]).includes(s.display) ? s.display : 'area'
    const view = typeof s.view === 'string' ? s.view.slice(0, 8192) : ''
    if (s.view !== undefined && typeof s.view !== 'string') warnings.push(`how ${s.metric} was shown ("view") is not text; showing it as by default`)
    statistics.push({ metric: s.metric, by: (s.by as string | null) ?? null, where: where as Record<string, string[]>, top, display, view })
  }
  const range = isObj(doc.range) ? { start: typeof doc.range.start === 'string' ? doc.range.start : undefined } : undefined
  const saved = fromSaved({ id: '', name, range, statistics: statistics as Parameters<typeof fromSaved>[0]['statistics'] })
  return { state: { ...EMPTY_WORKSHEET, ...saved.state, id: null }, warnings: [...warnings, ...saved.warnings] }
}
