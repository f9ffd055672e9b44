import { describe, expect, it } from 'vitest'
import type { AlertRulePublic } from '../api/client'
import { bodyOf, boundsText, daysText, deliveryText, draftOf, eventTitle, messageParts, newDraft, openCount, parseFilters, perElementDims, ruleText, toDuration } from './alerts'

const rule = (over: Partial<AlertRulePublic> = {}): AlertRulePublic => ({
  id: 'r', name: 'busy', metric: 'nfs.ops', where: { op: ['read'] }, by: null, condition: 'above', threshold: 50, hold_s: 300, clear_s: 60,
  repost_s: 0, days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], from_time: null, to_time: null, timezone: null,
  webhook: null, has_secret: true, enabled: true, statistic: 'NFS operations per second of type read', unit: 'ops/s',
  created: 0, created_by: 'a', updated: 0, updated_by: 'a', state: { active: false, since: null, value: null, checked_upto: null, open_count: 0, open: [], value_element: null, elements_seen: null, withheld: 0, withheld_total: 0 }, ...over,
})

describe('alert drafts', () => {
  it.each([
    [300, { n: 5, unit: 'min' }],
    [7200, { n: 2, unit: 'h' }],
    [90, { n: 90, unit: 's' }],
    [0, { n: 0, unit: 's' }],
  ])('%d s reads as %j', (s, want) => expect(toDuration(s)).toEqual(want))

  it.each([
    ['', { where: {} }],
    ['op=read', { where: { op: ['read'] } }],
    ['op=read,write; client=10.0.0.7', { where: { op: ['read', 'write'], client: ['10.0.0.7'] } }],
    ['op=read op=write', { where: { op: ['read', 'write'] } }],
    ['op', { error: 'cannot read filter "op": write dim=value or dim=v1,v2' }],
    ['=read', { error: 'cannot read filter "=read": write dim=value or dim=v1,v2' }],
  ])('filters %j', (text, want) => expect(parseFilters(text)).toEqual(want))

  it('a rule round-trips through the form, keeping its secret unless retyped', () => {
    const r = rule({ from_time: '22:00', to_time: '06:00', timezone: 'UTC', days: ['fri'], repost_s: 3600 })
    const res = bodyOf(draftOf(r))
    expect(res).toEqual({
      body: { name: 'busy', metric: 'nfs.ops', where: { op: ['read'] }, by: null, condition: 'above', threshold: 50, hold_s: 300, clear_s: 60,
        repost_s: 3600, days: ['fri'], from_time: '22:00', to_time: '06:00', timezone: 'UTC', webhook: null, enabled: true },
    })
    expect(bodyOf({ ...draftOf(r), secret: '' })).toMatchObject({ body: { secret: '' } })
  })

  it('a per-element rule keeps its breakdown through the form; none is the total', () => {
    expect(bodyOf(draftOf(rule({ by: 'client' })))).toMatchObject({ body: { by: 'client' } })
    expect(newDraft('nfs.ops', { op: ['read'] }, 'client')).toMatchObject({ by: 'client', filters: 'op=read' })
    expect(bodyOf({ ...newDraft('nfs.ops'), name: 'x', threshold: '5' })).toMatchObject({ body: { by: null } })
  })

  it('offers the dimensions of a metric to fire per element of, not its histograms', () => {
    const m = { dimensions: ['host', 'client', 'op', 'latency', 'size'], histograms: [{ name: 'latency', unit: 'ns', lo: 0, hi: 40 }, { name: 'size', unit: 'B', lo: 0, hi: 30 }] }
    expect(perElementDims(m)).toEqual(['host', 'client', 'op'])
    expect(perElementDims(undefined)).toEqual([])
  })

  it('names what the form must fix', () => {
    expect(bodyOf({ ...newDraft('nfs.ops'), name: 'x', threshold: 'lots' })).toEqual({ error: 'threshold must be a number' })
    expect(bodyOf({ ...newDraft('nfs.ops'), name: 'x', threshold: '' })).toEqual({ error: 'threshold must be a number' })
    expect(bodyOf({ ...newDraft('nfs.ops'), threshold: '5' })).toEqual({ error: 'give the alert a name' })
    expect(bodyOf({ ...newDraft('nfs.ops'), name: 'x', threshold: '5', filters: 'op' })).toHaveProperty('error')
  })
})

describe('alerts in words', () => {
  it.each([
    [['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], 'every day'],
    [['mon', 'tue', 'wed', 'thu', 'fri'], 'Mon–Fri'],
    [['sat', 'sun'], 'Sat, Sun'],
    [['mon', 'wed', 'thu', 'fri', 'sun'], 'Mon, Wed–Fri, Sun'],
  ])('%j is %s', (days, want) => expect(daysText(days)).toBe(want))

  it('describes a rule', () => {
    expect(ruleText(rule())).toBe('above 50 ops/s for 5 min; clears after 1 min')
    expect(ruleText(rule({ condition: 'below', threshold: 1500, repost_s: 3600, days: ['mon', 'tue', 'wed', 'thu', 'fri'], from_time: '09:00', to_time: '17:00', timezone: 'Europe/Berlin' })))
      .toBe('below 1,500 ops/s for 5 min; clears after 1 min; reposts every 1 h; Mon–Fri 09:00–17:00 (Europe/Berlin)')
    expect(ruleText(rule({ by: 'client' }))).toBe('any client above 50 ops/s for 5 min; clears after 1 min')
    expect(ruleText(rule({ by: 'op' }))).toBe('any type above 50 ops/s for 5 min; clears after 1 min')
  })

  it('says what bounds a per-element rule, and what they cut', () => {
    const state = rule().state
    expect(boundsText(rule(), 20, 10)).toBe('')
    expect(boundsText(rule({ by: 'client' }), 20, 10)).toBe('checks the 20 busiest clients each second; at most 10 open at once')
    expect(boundsText(rule({ by: 'disk', condition: 'below', state: { ...state, withheld: 2, withheld_total: 5 } }), 20, 10))
      .toBe('checks the 20 busiest disks each second (and those falling out of them); at most 10 open at once; 2 withheld now (5 since saved)')
  })

  it('counts every open element of a per-element rule', () => {
    const state = rule().state
    expect(openCount([rule({ state: { ...state, active: true, open_count: 1 } }), rule({ by: 'client', state: { ...state, active: true, open_count: 3 } }), rule()])).toBe(4)
    expect(openCount(undefined)).toBe(0)
  })

  it.each([
    [{ delivery: 'none', attempts: 0 }, ''],
    [{ delivery: 'delivered', attempts: 1 }, 'delivered'],
    [{ delivery: 'delivered', attempts: 3 }, 'delivered after 3 attempts'],
    [{ delivery: 'pending', attempts: 0 }, 'sending'],
    [{ delivery: 'pending', attempts: 1 }, 'retrying (1 attempt failed)'],
    [{ delivery: 'failed', attempts: 5 }, 'failed after 5 attempts'],
  ] as const)('delivery %j', (e, want) => expect(deliveryText(e)).toBe(want))
})

describe('per-element events, clients by name', () => {
  const names = { '10.0.0.7': 'nfs-a' }
  const ev = { label: 'busy clients', dim: 'client', element: '10.0.0.7', message: 'busy clients: NFS operations per second for client 10.0.0.7 above 50 ops/s for 5 min (now 100)' }

  it('titles an event with its element, a client by its name', () => {
    expect(eventTitle(ev, names)).toBe('busy clients: client nfs-a')
    expect(eventTitle(ev, {})).toBe('busy clients: client 10.0.0.7')
    expect(eventTitle({ label: 'slow disks', dim: 'disk', element: 'sda' }, names)).toBe('slow disks: disk sda')
    expect(eventTitle({ label: 'by op', dim: 'op', element: '' })).toBe('by op: type (none)')
    expect(eventTitle({ label: 'busy', dim: null, element: null }, names)).toBe('busy')
  })

  it('names the client in a message, keeping its address for the hover', () => {
    expect(messageParts(ev, names)).toEqual([
      { text: 'busy clients: NFS operations per second for client ' },
      { text: 'nfs-a', address: '10.0.0.7' },
      { text: ' above 50 ops/s for 5 min (now 100)' },
    ])
    // an unnamed client, a total's event and another dimension's element stay as written
    expect(messageParts(ev, {})).toEqual([{ text: ev.message }])
    expect(messageParts({ ...ev, dim: null, element: null }, names)).toEqual([{ text: ev.message }])
    expect(messageParts({ ...ev, dim: 'file', element: '10.0.0.7' }, names)).toEqual([{ text: ev.message }])
  })
})
