// The worksheet links the backend builds for webhook posts (backend/loupe/links.py) must open the
// worksheet they describe: each case of the shared fixture is decoded here as the UI decodes a
// link, and written back byte for byte, so the two sides cannot drift apart unseen.
import { describe, expect, it } from 'vitest'
import fixture from '../../../tests/fixtures/worksheet-links.json'
import { decodeWorksheet, encodeWorksheet, makeStatistic, rangeSeconds } from '../state/url'

interface Case {
  about: string
  metric: string
  where: Record<string, string[]>
  by: string | null
  start: number
  end: number
  query: string
}

describe('worksheet links from the backend', () => {
  it.each((fixture.cases as Case[]).map((c) => [c.about, c] as const))('%s', (_, c) => {
    const { state, warnings } = decodeWorksheet(c.query)
    expect(warnings).toEqual([])
    expect(state.statistics).toEqual([makeStatistic(c.metric, c.by, c.where)])
    const at = Math.ceil(c.end)
    expect(state.paused).toBe(true)
    expect(state.at).toBe(at)
    // the span reaches back to start, in whole minutes, a minute at least
    const span = rangeSeconds(state.range)
    expect(span).toBeGreaterThanOrEqual(Math.max(60, at - c.start))
    expect(span).toBeLessThan(Math.max(60, at - c.start) + 60)
    expect(encodeWorksheet(state)).toBe(c.query)
  })
})
