import { describe, expect, it } from 'vitest'
import { addressList, addressOf, badRows, elementHover, elementName, entriesToSave, namedTitle } from './names'

const names = { '10.0.0.7': 'nfs-a', '2001:db8::1': 'six' }

describe('client labels', () => {
  it.each([
    // dim, key, shown, hover, address behind the name
    ['client', '10.0.0.7', 'nfs-a', 'nfs-a (10.0.0.7)', '10.0.0.7'],
    ['client', '2001:db8::1', 'six', 'six (2001:db8::1)', '2001:db8::1'],
    ['client', '10.0.0.8', '10.0.0.8', '10.0.0.8', null],
    ['client', '', '(none)', '(none)', null],
    ['file', '10.0.0.7', '10.0.0.7', '10.0.0.7', null], // only client elements are named
    [null, '10.0.0.7', '10.0.0.7', '10.0.0.7', null],
  ])('%s %s reads as %s', (dim, key, shown, hover, address) => {
    expect(elementName(dim, key, names)).toBe(shown)
    expect(elementHover(dim, key, names)).toBe(hover)
    expect(addressOf(dim, key, names)).toBe(address)
  })

  it('work without names', () => {
    expect(elementName('client', '10.0.0.7', undefined)).toBe('10.0.0.7')
    expect(elementHover('client', '10.0.0.7', {})).toBe('10.0.0.7')
  })

  it('list addresses with their names', () => {
    expect(addressList(['10.0.0.7', '10.0.0.8'], names)).toBe('nfs-a (10.0.0.7), 10.0.0.8')
    expect(addressList([], names)).toBe('')
  })
})

describe('a statistic name with its client filter named', () => {
  it.each([
    [
      'NFS operations per second for client 10.0.0.7 broken down by file',
      { client: ['10.0.0.7'] },
      'NFS operations per second for client nfs-a broken down by file',
    ],
    [
      'NFS operations per second for client {10.0.0.7, 10.0.0.8} broken down by op',
      { client: ['10.0.0.7', '10.0.0.8'] },
      'NFS operations per second for client {nfs-a, 10.0.0.8} broken down by op',
    ],
    // nothing named: unchanged
    ['NFS operations per second for client 10.0.0.8', { client: ['10.0.0.8'] }, 'NFS operations per second for client 10.0.0.8'],
    // a file that looks like an address is not a client
    ['NFS operations per second for file 10.0.0.7', { file: ['10.0.0.7'] }, 'NFS operations per second for file 10.0.0.7'],
    ['NFS operations per second broken down by client', {}, 'NFS operations per second broken down by client'],
  ])('%s', (title, where, expected) => {
    expect(namedTitle(title, where, names)).toBe(expected)
  })
})

describe('editing the mapping table', () => {
  const rows = [
    { address: ' 10.0.0.7 ', name: 'nfs-a' },
    { address: '', name: '  ' }, // blank: dropped
    { address: '10.0.0.300', name: 'x' },
    { address: '10.0.0.9', name: '' },
  ]

  it('sends the filled rows and remembers where each came from', () => {
    expect(entriesToSave(rows)).toEqual({
      entries: [
        { address: '10.0.0.7', name: 'nfs-a' },
        { address: '10.0.0.300', name: 'x' },
        { address: '10.0.0.9', name: '' },
      ],
      from: [0, 2, 3],
    })
  })

  it.each([
    ["entries.1.address: Value error, '10.0.0.300' is not an IPv4 or IPv6 address", [2]],
    ['entries.1.address: Value error, x; entries.2.name: Value error, name is empty', [2, 3]],
    ['entries.0 and entries.2 both name 10.0.0.7: give each address one name', [0, 3]],
    ['entries: Input should be a valid list', []],
    ['entries.9.name: beyond the rows', []],
  ])('marks the rows named by %s', (detail, expected) => {
    expect([...badRows(detail, entriesToSave(rows).from)]).toEqual(expected)
  })
})
