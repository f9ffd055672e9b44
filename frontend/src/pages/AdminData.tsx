// Admin: how long each tier is kept, and deleting a host's or a time range's statistics.
// A delete is always counted first (a dry run), then confirmed; both land in the audit log.
import { useEffect, useState, type FormEvent } from 'react'
import { useDeleteData, useRetention, useSetRetention, type DataDeleted, type RetentionPublic } from '../api/admin'
import { useStatus } from '../api/hooks'
import { formatBytes, formatDateTime, localToUnix } from '../lib/format'
import { DateTimeInput } from '../components/DateTimeInput'
import { ErrorLine } from '../components/ErrorLine'
import { describeKeep, describeScope, rowsByTier, toUnits, UNIT_SECONDS, type Unit } from '../lib/retention'

type Tier = 'second' | 'minute' | 'hour'
const TIERS: Tier[] = ['second', 'minute', 'hour']

// Re-mounted (keyed by set_at) when the retention changes, so the fields show what is in force;
// what the last change pruned is kept by the parent across that.
function Retention({ data, pruned, setPruned }: { data: RetentionPublic; pruned: number | null; setPruned: (n: number) => void }) {
  const set = useSetRetention()
  const [draft, setDraft] = useState(() => Object.fromEntries(TIERS.map((t) => [t, toUnits(data[t])])) as Record<Tier, { n: number; unit: Unit }>)
  const seconds = (t: Tier) => Math.round(draft[t].n * UNIT_SECONDS[draft[t].unit])
  const shorter = TIERS.filter((t) => seconds(t) < data[t])

  function submit(e: FormEvent) {
    e.preventDefault()
    const warn = shorter.map((t) => `${t}s older than ${describeKeep(seconds(t))}`).join(', ')
    if (shorter.length && !confirm(`This deletes ${warn} at once. Go on?`)) return
    set.mutate(
      { second: seconds('second'), minute: seconds('minute'), hour: seconds('hour') },
      { onSuccess: (r) => setPruned(Object.values(r.pruned).reduce((a, b) => a + b, 0)) },
    )
  }

  return (
    <form onSubmit={submit} data-testid="retention-form">
      <ErrorLine error={set.error} />
      <table className="table">
        <thead>
          <tr>
            <th>Tier</th>
            <th>Kept for</th>
            <th>Rows</th>
            <th>Oldest</th>
            <th>Newest</th>
          </tr>
        </thead>
        <tbody>
          {TIERS.map((t) => {
            const ext = data.tiers.find((x) => x.tier === t)
            return (
              <tr key={t} data-testid="retention-tier" data-tier={t} data-keep={data[t]}>
                <td>per {t}</td>
                <td className="admin-actions">
                  <input
                    type="number"
                    min={1}
                    step="any"
                    className="narrow"
                    aria-label={`keep the ${t} tier for`}
                    data-testid={`retention-${t}`}
                    value={draft[t].n}
                    onChange={(e) => setDraft({ ...draft, [t]: { ...draft[t], n: Number(e.target.value) } })}
                  />
                  <select
                    aria-label={`unit of the ${t} tier's retention`}
                    data-testid={`retention-${t}-unit`}
                    value={draft[t].unit}
                    onChange={(e) => setDraft({ ...draft, [t]: { ...draft[t], unit: e.target.value as Unit } })}
                  >
                    <option value="hours">hours</option>
                    <option value="days">days</option>
                  </select>
                </td>
                <td>{ext?.rows.toLocaleString() ?? '–'}</td>
                <td>{ext?.oldest != null ? formatDateTime(ext.oldest) : '–'}</td>
                <td>{ext?.newest != null ? formatDateTime(ext.newest) : '–'}</td>
              </tr>
            )
          })}
        </tbody>
      </table>
      <div className="admin-form">
        <button className="button button-primary" type="submit" disabled={set.isPending} data-testid="retention-save">
          Save retention
        </button>
        <span className="field-help" data-testid="retention-origin">
          {data.set_by ? `set by ${data.set_by} ${formatDateTime(data.set_at ?? 0)}` : 'the configured default (LOUPE_RETAIN_*)'}
          {'; store '}
          {formatBytes(data.store_bytes)}
          {pruned !== null && <span data-testid="retention-pruned">; the change removed {pruned.toLocaleString()} rows</span>}
        </span>
      </div>
    </form>
  )
}

function DeleteData() {
  const status = useStatus()
  const del = useDeleteData()
  const [host, setHost] = useState('')
  const [from, setFrom] = useState('')
  const [to, setTo] = useState('')
  const [counted, setCounted] = useState<DataDeleted | null>(null)
  const [done, setDone] = useState<DataDeleted | null>(null)
  const start = localToUnix(from)
  const end = localToUnix(to)
  const invalid = start === 'invalid' || end === 'invalid'
  const body = invalid ? null : { host: host || null, start, end }
  const key = JSON.stringify(body)
  useEffect(() => setCounted(null), [key]) // a count is for the form it was made for

  function count(e: FormEvent) {
    e.preventDefault()
    setDone(null)
    if (body) del.mutate({ ...body, dry_run: true }, { onSuccess: setCounted })
  }
  function remove() {
    if (!body || !counted) return
    const what = describeScope(body.host, body.start, body.end, formatDateTime)
    if (!confirm(`Delete ${counted.total_rows.toLocaleString()} rows: ${what}? This cannot be undone.`)) return
    del.mutate({ ...body, dry_run: false }, { onSuccess: (r) => (setDone(r), setCounted(null)) })
  }
  const tiers = counted && rowsByTier(counted.rows)

  return (
    <form className="admin-form" onSubmit={count} data-testid="delete-form">
      <ErrorLine error={del.error} />
      <select value={host} onChange={(e) => setHost(e.target.value)} aria-label="host" data-testid="delete-host">
        <option value="">every host</option>
        {status.data?.hosts.map((h) => (
          <option key={h} value={h}>
            {h}
          </option>
        ))}
      </select>
      <DateTimeInput label="from" value={from} onChange={setFrom} className="field-help" testId="delete-from" />
      <DateTimeInput label="to" value={to} onChange={setTo} className="field-help" testId="delete-to" />
      <button className="button" type="submit" disabled={invalid || del.isPending || (!host && start === null && end === null)} data-testid="delete-count">
        Count
      </button>
      <button className="button button-danger" type="button" disabled={!counted || del.isPending} onClick={remove} data-testid="delete-submit">
        Delete
      </button>
      <span className="field-help">local time; empty is unbounded</span>
      {counted && tiers && (
        <div className="admin-result" data-testid="delete-counted" data-rows={counted.total_rows}>
          Would delete {tiers.seconds.toLocaleString()} rows of seconds, {tiers.minutes.toLocaleString()} of minutes and {tiers.hours.toLocaleString()} of hours
          {counted.rebuilt.length > 0 && `; ${counted.rebuilt.length} straddling minutes or hours are rebuilt from what remains`}.
        </div>
      )}
      {done && (
        <div className="admin-result" data-testid="delete-done" data-rows={done.total_rows}>
          Deleted {done.total_rows.toLocaleString()} rows ({describeScope(done.host, done.start, done.end, formatDateTime)}); store {formatBytes(done.bytes_before)} →{' '}
          {formatBytes(done.bytes_after)}.
        </div>
      )}
    </form>
  )
}

export function AdminData() {
  const retention = useRetention()
  const [pruned, setPruned] = useState<number | null>(null)
  return (
    <section className="card admin-section" data-testid="admin-data">
      <div className="card-head">
        <h2 className="card-title">Data</h2>
        <span className="card-badges field-help">retention per tier, and deleting statistics</span>
      </div>
      <div className="admin-body">
        <ErrorLine error={retention.error} />
        {retention.data && <Retention key={`${retention.data.set_at}`} data={retention.data} pruned={pruned} setPruned={setPruned} />}
        <h3 className="card-subtitle">Delete statistics</h3>
        <DeleteData />
      </div>
    </section>
  )
}
