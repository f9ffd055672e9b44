// Client names: results carry {address: name} for their client addresses (LOUPE_CLIENT_NAMES).
// A named client shows its name, with the address on hover; filters and links keep the address.
// Pure; tested in names.test.ts.
import { elementLabel } from '../charts/palette'

export type Names = Record<string, string>

/** The dimension whose elements are client addresses. */
export const CLIENT_DIM = 'client'

/** How an element reads: a client's name when it has one, else the element itself ('' is "(none)"). */
export function elementName(dim: string | null | undefined, key: string, names: Names | undefined): string {
  return (dim === CLIENT_DIM && names?.[key]) || elementLabel(key)
}

/** An element with its address, for hovers and tooltips: "nfs-a (10.0.0.7)"; just the element when unnamed. */
export function elementHover(dim: string | null | undefined, key: string, names: Names | undefined): string {
  const name = dim === CLIENT_DIM ? names?.[key] : undefined
  return name ? `${name} (${key})` : elementLabel(key)
}

/** The address behind a shown name, or null when the element is shown as itself. */
export function addressOf(dim: string | null | undefined, key: string, names: Names | undefined): string | null {
  return dim === CLIENT_DIM && names?.[key] ? key : null
}

/**
 * A statistic's English name ("NFS operations per second for client 10.0.0.7 broken down by
 * file") with its client filter's addresses named: "... for client nfs-a broken down by file".
 * Only the client filter's phrase is rewritten, so a file or share that looks like an address stays.
 */
export function namedTitle(title: string, where: Record<string, string[]> | undefined, names: Names | undefined): string {
  const clients = where?.[CLIENT_DIM] ?? []
  if (!clients.length || !names || !clients.some((c) => names[c])) return title
  const shown = (vals: string[]) => (vals.length === 1 ? vals[0]! : `{${vals.join(', ')}}`)
  return title.replace(`for client ${shown(clients)}`, `for client ${shown(clients.map((c) => names[c] || c))}`)
}

/** A list of addresses as text, each named where it can be: "nfs-a (10.0.0.7), 10.0.0.8". */
export function addressList(addresses: string[], names: Names | undefined): string {
  return addresses.map((a) => elementHover(CLIENT_DIM, a, names)).join(', ')
}

/** A row of the mapping table being edited: what was typed, untrimmed. */
export interface DraftRow {
  address: string
  name: string
}

/**
 * The entries to save (rows left wholly blank are dropped) and, for each, the draft row it came
 * from, so the server's "entries.3.name: ..." can mark the right row.
 */
export function entriesToSave(rows: DraftRow[]): { entries: DraftRow[]; from: number[] } {
  const entries: DraftRow[] = []
  const from: number[] = []
  rows.forEach((r, i) => {
    if (!r.address.trim() && !r.name.trim()) return
    entries.push({ address: r.address.trim(), name: r.name })
    from.push(i)
  })
  return { entries, from }
}

/** The draft rows an error names ("entries.3.address: ...", "entries.1 and entries.4 both name ..."). */
export function badRows(detail: string, from: number[]): Set<number> {
  const out = new Set<number>()
  for (const m of detail.matchAll(/\bentries\.(\d+)\b/g)) {
    const row = from[Number(m[1])]
    if (row !== undefined) out.add(row)
  }
  return out
}
