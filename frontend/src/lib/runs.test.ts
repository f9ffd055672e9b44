import { describe, expect, it } from 'vitest'
import type { RunReport } from '../api/client'
import { agreementLevel, agreementText, compareRows, decodeRunsView, deltaText, durationText, encodeRunsView, resultsRequest, runState, worksheetForRun } from './runs'

describe('runs view in the URL', () => {
  it.each([
    ['', { run: null, tolerance: 2, compare: null, client: null }, 0],
    ['?run=ab12&tol=5', { run: 'ab12', tolerance: 5, compare: null, client: null }, 0],
    ['?tol=0', { run: null, tolerance: 2, compare: null, client: null }, 1],
    ['?tol=abc&run=ab', { run: 'ab', tolerance: 2, compare: null, client: null }, 1],
    ['?run=<script>', { run: null, tolerance: 2, compare: null, client: null }, 1],
  ])('%s', (search, view, nWarnings) => {
    const got = decodeRunsView(search)
    expect(got.view).toEqual(view)
    expect(got.warnings).toHaveLength(nWarnings)
  })
  it('round-trips and leaves defaults out', () => {
    expect(encodeRunsView({ run: null, tolerance: 2 })).toBe('')
    const v = { run: 'c0ffee', tolerance: 0.5, compare: null, client: null }
    expect(decodeRunsView(encodeRunsView(v)).view).toEqual(v)
  })
})

describe('report wording', () => {
  it.each([
    [100, 130, null, '30 s'],
    [100, 345, null, '4 min 05 s'],
    [0, 3720, null, '1 h 02 min'],
    [100, null, 160, '1 min 00 s'],
  ])('duration %s..%s', (a, b, now, text) => expect(durationText(a, b, now ?? 0)).toBe(text))
  it.each([
    [99.5, 2, 'ok', '99.5 %'],
    [102, 2, 'ok', '102.0 %'],
    [76.9, 2, 'bad', '76.9 %'],
    [null, 2, 'none', '–'],
  ])('agreement %s within ±%s', (pct, tol, level, text) => {
    expect(agreementLevel(pct, tol)).toBe(level)
    expect(agreementText(pct)).toBe(text)
  })
  it('run state', () => {
    expect(runState({ running: true, exit_code: null })).toBe('running')
    expect(runState({ running: false, exit_code: 0 })).toBe('ended, exit 0')
    expect(runState({ running: false, exit_code: 3 })).toBe('ended, exit 3')
    expect(runState({ running: false, exit_code: null })).toBe('ended')
  })
})

describe('pasted results', () => {
  it('reads each format and names what is wrong', () => {
    expect(resultsRequest('client,read_bytes\n', 'csv', '')).toEqual({ csv: 'client,read_bytes\n' })
    expect(resultsRequest('[{"client": "a", "write_bytes": 1}]', 'simple', '')).toEqual({
      body: { format: 'simple', clients: [{ client: 'a', write_bytes: 1 }] },
    })
    expect(resultsRequest('fio: note\n{"jobs": []}', 'fio', ' 10.0.0.7 ')).toEqual({
      body: { format: 'fio', report: { jobs: [] }, client: '10.0.0.7' },
    })
    expect(resultsRequest('  ', 'csv', '')).toEqual({ error: "paste the clients' results first" })
    expect('error' in resultsRequest('{"a": 1}', 'simple', '') && resultsRequest('{"a": 1}', 'simple', '')).toMatchObject({ error: /JSON list/ })
    expect(resultsRequest('[1]', 'fio', '')).toMatchObject({ error: /JSON object/ })
    expect(resultsRequest('{oops', 'simple', '')).toMatchObject({ error: /not JSON/ })
  })
})

describe('a run in the worksheet', () => {
  it('pauses at the end over the shortest preset that holds the run', () => {
    const ws = worksheetForRun(1000, 1500.4)
    expect(ws).toMatchObject({ range: '10m', paused: true, at: 1501 })
    expect(ws.statistics).toEqual([{ metric: 'nfs.bytes', by: 'client', where: {}, display: 'area', top: 10 }])
    expect(worksheetForRun(0, 30).range).toBe('1m')
    expect(worksheetForRun(0, 30 * 86400).range).toBe('1w')
  })
})

describe('comparing two runs', () => {
  it('keeps the pair and a client in the URL, and refuses what is not two runs', () => {
    const v = { run: null, tolerance: 2, compare: ['aa', 'bb'] as [string, string], client: '10.0.0.7' }
    expect(encodeRunsView(v)).toBe('?cmp=aa%2Cbb&client=10.0.0.7')
    expect(decodeRunsView(encodeRunsView(v)).view).toEqual(v)
    expect(decodeRunsView('?cmp=aa').warnings).toHaveLength(1)
    expect(decodeRunsView('?cmp=aa,aa').view.compare).toBeNull()
    expect(decodeRunsView('?cmp=aa,bb&run=cc').view.run).toBeNull()
  })

  const report = (observed: [string, number, number][], passed: [string, boolean][] = []) =>
    ({
      observed: observed.map(([client, b, o]) => ({ client, bytes_per_s: b, ops_per_s: o, read_bytes: 0, write_bytes: 0, read_ops: 0, write_ops: 0 })),
      clients: passed.map(([client, p]) => ({ client, passed: p })),
    }) as unknown as RunReport

  it('gives each client both runs and the change, busiest first', () => {
    const rows = compareRows(
      report([['a', 100, 10], ['b', 400, 40]], [['a', true]]),
      report([['a', 150, 5], ['c', 50, 1]], [['a', false], ['c', true]]),
    )
    expect(rows.map((r) => r.client)).toEqual(['b', 'a', 'c'])
    expect(rows[1]).toEqual({ client: 'a', bytesA: 100, bytesB: 150, bytesDeltaPct: 50, opsA: 10, opsB: 5, opsDeltaPct: -50, passedA: true, passedB: false })
    expect(rows[0]).toMatchObject({ bytesB: null, bytesDeltaPct: null, passedA: null })
    expect(deltaText(50)).toBe('+50.0 %')
    expect(deltaText(-3)).toBe('−3.0 %')
    expect(deltaText(null)).toBe('–')
  })
})
