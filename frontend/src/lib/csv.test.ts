import { describe, expect, it } from 'vitest'
import { csvCell, csvLines, fileName } from './csv'

describe('csvCell', () => {
  it.each([
    ['plain', 'plain'],
    ['/export/a,b', '"/export/a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ['two\nlines', '"two\nlines"'],
    ['=HYPERLINK("x")', '"\'=HYPERLINK(""x"")"'],
    ['+1', "'+1"],
    ['-rf', "'-rf"],
    ['@sum', "'@sum"],
    [12.5, '12.5'],
    [NaN, ''],
    [null, ''],
  ] as const)('%j -> %s', (v, want) => expect(csvCell(v)).toBe(want))

  it('joins rows with CRLF', () => {
    expect(csvLines([['a', 1], ['b,c', 2]])).toBe('a,1\r\n"b,c",2\r\n')
  })
})

describe('fileName', () => {
  it.each([
    ['NFS operations per second broken down by client', 'csv', 'nfs-operations-per-second-broken-down-by-client.csv'],
    ['../../etc/passwd', 'png', 'etc-passwd.png'],
    ['', 'json', 'loupe.json'],
  ])('%j', (title, ext, want) => expect(fileName(title, ext)).toBe(want))
})
