import { describe, expect, it } from 'vitest'
import type { AlertRulePublic } from '../api/client'
import { bodyOf, daysText, deliveryText, draftOf, newDraft, parseFilters, ruleText, toDuration } from './alerts'

const rule = (over: Partial<AlertRulePublic> = {}): AlertRulePublic => ({
  id: 'r', name: 'busy', metric: 'nfs.ops', where: { op: ['read'] }, condition: 'above', threshold: 50, hold_s: 300, clear_s: 60,
  repost_s: 0, days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], from_time: null, to_time: null, timezone: null,
  webhook: null, has_secret: true, enabled: true, statistic: 'NFS operations per second of type read', unit: 'ops/s',
  created: 0, created_by: 'a', updated: 0, updated_by: 'a', state: { active: false, since: null, value: null, checked_upto: null }, ...over,
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
      body: { name: 'busy', metric: 'nfs.ops', where: { op: ['read'] }, condition: 'above', threshold: 50, hold_s: 300, clear_s: 60,
        repost_s: 3600, days: ['fri'], from_time: '22:00', to_time: '06:00', timezone: 'UTC', webhook: null, enabled: true },
    })
    expect(bodyOf({ ...draftOf(r), secret: '' })).toMatchObject({ body: { secret: '' } })
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
