// Admin: the client name mapping table (replaced whole on save, audited) and where names come
// from (LOUPE_CLIENT_NAMES). Names and addresses are rendered as text.
import { useState, type FormEvent } from 'react'
import { useClientNames, useNamesPolicy, useSetClientNames, type ClientNamesPolicy, type ClientNamesTable } from '../api/names'
import { ErrorLine } from '../components/ErrorLine'
import { formatDateTime } from '../lib/format'
import { badRows, entriesToSave, type DraftRow } from '../lib/names'

const SOURCE_LABEL = { table: 'mapping table', hosts: 'hosts file', dns: 'reverse DNS' } as const

function Policy({ policy }: { policy: ClientNamesPolicy }) {
  const on = policy.sources.filter((s) => s.position !== null).sort((a, b) => a.position! - b.position!)
  const off = policy.sources.filter((s) => s.position === null)
  const cache = policy.dns_cache
  return (
    <div className="names-policy" data-testid="names-policy" data-order={policy.order.join(',')}>
      <div>
        {on.length ? 'A client shows the first name found in: ' : 'Clients show as addresses: no name source is on.'}
      </div>
      <ol className="names-sources">
        {on.map((s) => (
          <li key={s.source} data-testid="names-source" data-source={s.source}>
            <b>{SOURCE_LABEL[s.source]}</b> <span className="muted">{s.detail}</span>
            {s.problem && <span className="names-problem"> — {s.problem}</span>}
          </li>
        ))}
      </ol>
      {cache && (
        <div className="field-help" data-testid="dns-cache">
          DNS: {cache.names} names and {cache.unnamed} addresses without one cached, {cache.pending} lookups waiting; {cache.timeouts} timed out (
          {policy.dns_timeout_s} s), names kept {policy.dns_ttl_s} s, failures {policy.dns_negative_ttl_s} s.
        </div>
      )}
      <div className="field-help">
        {off.length > 0 && `Off: ${off.map((s) => SOURCE_LABEL[s.source]).join(', ')}. `}
        The order and sources are set with LOUPE_CLIENT_NAMES on the server (e.g. table,hosts,dns).
      </div>
    </div>
  )
}

function Cell(p: { row: number; field: 'address' | 'name'; placeholder: string; value: string; invalid: boolean; onChange: (v: string) => void }) {
  return (
    <td>
      <input
        className={p.field === 'address' ? 'mono' : undefined}
        aria-label={`${p.field} of row ${p.row + 1}`}
        aria-invalid={p.invalid || undefined}
        placeholder={p.placeholder}
        data-testid={`names-${p.field}`}
        value={p.value}
        onChange={(e) => p.onChange(e.target.value)}
      />
    </td>
  )
}

// Re-mounted (keyed by set_at) when the table changes, so the rows show what is in force.
function Editor({ table }: { table: ClientNamesTable }) {
  const save = useSetClientNames()
  const [rows, setRows] = useState<DraftRow[]>(() => [...table.entries.map((e) => ({ ...e })), { address: '', name: '' }])
  const { entries, from } = entriesToSave(rows)
  const bad = save.error ? badRows(save.error.message, from) : new Set<number>()
  const set = (i: number, patch: Partial<DraftRow>) => {
    const next = rows.map((r, j) => (j === i ? { ...r, ...patch } : r))
    // Keep one empty row at the end to type into.
    const last = next[next.length - 1]
    setRows(last && (last.address || last.name) ? [...next, { address: '', name: '' }] : next)
  }
  const unchanged = entries.length === table.entries.length && entries.every((e, i) => e.address === table.entries[i]!.address && e.name === table.entries[i]!.name)

  function submit(e: FormEvent) {
    e.preventDefault()
    save.mutate(entries)
  }

  return (
    <form onSubmit={submit} data-testid="names-form">
      <ErrorLine error={save.error} />
      <table className="table names-table">
        <thead>
          <tr>
            <th>Address</th>
            <th>Name</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {rows.map((r, i) => (
            <tr key={i} data-testid="names-row" className={bad.has(i) ? 'row-bad' : ''}>
              <Cell row={i} field="address" placeholder="10.0.0.7 or 2001:db8::7" value={r.address} invalid={bad.has(i)} onChange={(v) => set(i, { address: v })} />
              <Cell row={i} field="name" placeholder="build-server-3" value={r.name} invalid={bad.has(i)} onChange={(v) => set(i, { name: v })} />
              <td>
                {(r.address || r.name) && (
                  <button type="button" className="button small" aria-label={`remove row ${i + 1}`} data-testid="names-remove" onClick={() => setRows(rows.filter((_, j) => j !== i))}>
                    Remove
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <div className="admin-form">
        <button className="button button-primary" type="submit" disabled={unchanged || save.isPending} data-testid="names-save">
          Save {entries.length} {entries.length === 1 ? 'name' : 'names'}
        </button>
        <span className="field-help" data-testid="names-origin">
          {table.set_by ? `saved by ${table.set_by} at ${formatDateTime(table.set_at!)}` : 'never saved'}; a save replaces the whole table and shows
          from the next refresh of each chart
        </span>
      </div>
    </form>
  )
}

export function AdminClientNames() {
  const table = useClientNames()
  const policy = useNamesPolicy()
  return (
    <section className="card admin-section" data-testid="admin-client-names">
      <div className="card-head">
        <h2 className="card-title">Client names</h2>
        <span className="card-badges field-help">shown instead of addresses; the address stays on hover and in filters</span>
      </div>
      <div className="admin-body">
        <ErrorLine error={table.error ?? policy.error} />
        {policy.data && <Policy policy={policy.data} />}
        {table.data && <Editor key={table.data.set_at ?? 'never'} table={table.data} />}
      </div>
    </section>
  )
}
