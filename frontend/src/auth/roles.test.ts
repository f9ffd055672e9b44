import { describe, expect, it } from 'vitest'
import { can, signInError, type Role } from './roles'

describe('can', () => {
  const cases: [Role, Role, boolean][] = [
    ['viewer', 'viewer', true],
    ['viewer', 'operator', false],
    ['viewer', 'admin', false],
    ['operator', 'viewer', true],
    ['operator', 'operator', true],
    ['operator', 'admin', false],
    ['admin', 'operator', true],
    ['admin', 'admin', true],
  ]
  it.each(cases)('%s may do what %s may: %s', (role, need, want) => expect(can(role, need)).toBe(want))
})

describe('signInError', () => {
  const cases: [number, string | undefined, string | null, string][] = [
    [401, 'wrong user name or password', null, 'Wrong user name or password.'],
    [429, 'too many', '42', 'Too many attempts. Try again in 42 s.'],
    [429, 'too many', null, 'Too many attempts. Try again in a minute.'],
    [422, 'user: String should have at least 1 character', null, 'user: String should have at least 1 character'],
    [0, undefined, null, 'Loupe does not answer. Is the server running?'],
    [500, undefined, null, 'Sign-in failed (500).'],
  ]
  it.each(cases)('%i %s -> %s', (status, detail, retry, want) => expect(signInError(status, detail, retry)).toBe(want))
})
