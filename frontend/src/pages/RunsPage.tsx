// Benchmark runs: the list (start and stop one here, or with `loupe run -- COMMAND`), and a
// run's validation report: what each client reported against what crossed the wire.
// Client addresses, names and reasons are rendered as text, never as HTML.
import { useMemo, useState } from 'react'
import type { RunPublic, RunReport } from '../api/client'
import { useDeleteRun, useImportResults, useRunHeatmap, useRunReport, useRuns, useStartRun, useStopRun } from '../api/hooks'
import { SimpleHeatmap } from '../charts/heatmap/Simple'
import { onSharedScales } from '../charts/heatmap/transform'
import { ClientLabel } from '../components/ClientLabel'
import { Figures } from '../components/Figures'
import { formatBytes, formatDateTime, formatRate } from '../lib/format'
import { addressList, CLIENT_DIM, elementHover } from '../lib/names'
import {
  agreementLevel,
  agreementText,
  compareRows,
  decodeRunsView,
  deltaText,
  durationText,
  encodeRunsView,
  resultsRequest,
  runState,
  worksheetForRun,
  type ResultsFormat,
  type RunsView,
} from '../lib/runs'
import { useNowMs } from '../state/clock'
import { navigate, useLocation } from '../state/router'
import { openWorksheet } from '../state/useWorksheet'

export function openRuns(view: RunsView = { run: null, tolerance: 2 }) {
  navigate(`/runs${encodeRunsView(view)}`)
}

export function RunsPage() {
  const { search } = useLocation()
  const { view, warnings } = useMemo(() => decodeRunsView(search), [search])
  const runs = useRuns()
  const selected = runs.data?.find((r) => r.id === view.run) ?? null
  return (
    <main className="page runs-page" data-testid="runs-page">
      <div className="toolbar">
        <div className="toolbar-group">
          <h1 className="ws-name">Benchmark runs</h1>
          <StartRun onStarted={(id) => openRuns({ ...view, run: id })} />
        </div>
        <div className="muted small">
          or from a shell: <span className="mono">loupe run --name NAME -- COMMAND</span>
        </div>
      </div>
      {warnings.length > 0 && (
        <div className="notice" data-testid="url-warnings">
          {warnings.join('; ')}
        </div>
      )}
      {runs.error && <div className="error">Cannot read runs: {runs.error.message}</div>}
      {!runs.data && !runs.error && <div className="loading">Loading runs…</div>}
      {runs.data && !runs.data.length && <div className="empty big">No runs yet. Start one above, then run the benchmark.</div>}
      {runs.data && runs.data.length > 0 && <RunList runs={runs.data} view={view} />}
      {view.run && runs.data && !selected && <div className="error">No run {view.run} (deleted?).</div>}
      {selected && <RunDetail key={selected.id} run={selected} view={view} />}
      {view.compare && runs.data && <Compare runs={runs.data} view={view} pair={view.compare} />}
    </main>
  )
}

function StartRun({ onStarted }: { onStarted: (id: string) => void }) {
  const [name, setName] = useState('')
  const start = useStartRun()
  return (
    <form
      className="start-run"
      onSubmit={(e) => {
        e.preventDefault()
        if (name.trim()) start.mutate(name.trim(), { onSuccess: (r) => (setName(''), onStarted(r.id)) })
      }}
    >
      <input aria-label="Run name" data-testid="run-name" placeholder="run name" value={name} maxLength={200} onChange={(e) => setName(e.target.value)} />
      <button className="button" type="submit" data-testid="run-start" disabled={!name.trim() || start.isPending}>
        Start run
      </button>
      {start.error && <span className="bad-text small">{start.error.message}</span>}
    </form>
  )
}

function RunList({ runs, view }: { runs: RunPublic[]; view: RunsView }) {
  const now = useNowMs() / 1000
  const stop = useStopRun()
  const [picked, setPicked] = useState<string[]>(() => view.compare ?? [])
  const toggle = (id: string) => setPicked((p) => (p.includes(id) ? p.filter((x) => x !== id) : [...p, id].slice(-2)))
  return (
    <section className="panel" aria-label="Runs">
      <div className="panel-head">
        <span className="muted small">tick two ended runs to compare them</span>
        <button
          className="button"
          data-testid="run-compare"
          disabled={picked.length !== 2}
          onClick={() => openRuns({ run: null, tolerance: view.tolerance, compare: [picked[0]!, picked[1]!], client: null })}
        >
          Compare
        </button>
      </div>
      <div className="table-scroll">
        <table className="table" data-testid="run-list">
          <thead>
            <tr>
              <th aria-label="Compare" />
              <th>Name</th>
              <th>Started</th>
              <th className="num">Duration</th>
              <th>State</th>
              <th className="num">Client results</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {runs.map((r) => (
              <tr key={r.id} data-testid="run-row" data-run={r.id} data-running={r.running} className={r.id === view.run ? 'selected' : ''}>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`Compare ${r.name}`}
                    data-testid="run-pick"
                    disabled={r.running}
                    checked={picked.includes(r.id)}
                    onChange={() => toggle(r.id)}
                  />
                </td>
                <td>
                  <a
                    href={`/runs${encodeRunsView({ ...view, run: r.id })}`}
                    data-testid="run-open"
                    onClick={(e) => {
                      e.preventDefault()
                      openRuns({ ...view, run: r.id })
                    }}
                  >
                    {r.name}
                  </a>
                </td>
                <td>{formatDateTime(r.start)}</td>
                <td className="num">{durationText(r.start, r.end, now)}</td>
                <td data-testid="run-state">{runState(r)}</td>
                <td className="num">{r.results.length}</td>
                <td>
                  {r.running && (
                    <button className="button" data-testid="run-stop" disabled={stop.isPending} onClick={() => stop.mutate(r.id)}>
                      Stop
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {stop.error && <div className="error">Cannot stop the run: {stop.error.message}</div>}
    </section>
  )
}

function RunDetail({ run, view }: { run: RunPublic; view: RunsView }) {
  const report = useRunReport(run.id, view.tolerance, !run.running)
  const del = useDeleteRun()
  const [tol, setTol] = useState(String(view.tolerance))
  return (
    <section className="panel run-detail" aria-label={`Run ${run.name}`} data-testid="run-detail">
      <div className="panel-head">
        <h2 data-testid="run-title">{run.name}</h2>
        <span className="muted small">
          {formatDateTime(run.start)} – {run.end ? formatDateTime(run.end) : 'now'} · {runState(run)}
          {run.command && <span className="mono"> · {run.command.join(' ')}</span>}
        </span>
        <div className="header-right">
          {run.end && (
            <button className="button" data-testid="run-worksheet" onClick={() => openWorksheet(worksheetForRun(run.start, run.end!))}>
              Show in worksheet
            </button>
          )}
          {run.end && (
            <a className="button" href={`/api/v1/runs/${run.id}/report?tolerance=${view.tolerance}&format=csv`} data-testid="run-csv" download>
              CSV
            </a>
          )}
          <button
            className="button"
            data-testid="run-delete"
            onClick={() => {
              if (confirm(`Delete run "${run.name}"? Its imported results go too; the statistics stay.`))
                del.mutate(run.id, { onSuccess: () => openRuns({ ...view, run: null }) })
            }}
          >
            Delete
          </button>
        </div>
      </div>
      {run.running ? (
        <div className="notice">The run is in progress: stop it when the benchmark ends, then import the clients' results.</div>
      ) : (
        <>
          <form
            className="tolerance"
            onSubmit={(e) => {
              e.preventDefault()
              const v = Number(tol)
              if (Number.isFinite(v) && v > 0 && v <= 100) navigate(`/runs${encodeRunsView({ ...view, tolerance: v })}`, { replace: true })
            }}
          >
            <label>
              tolerance ±{' '}
              <input data-testid="run-tolerance" aria-label="Tolerance in percent" size={4} value={tol} onChange={(e) => setTol(e.target.value)} /> %
            </label>
            <button className="button small" type="submit">
              apply
            </button>
          </form>
          {report.error && <div className="error">Cannot compute the report: {report.error.message}</div>}
          {report.data && <Report rep={report.data} />}
          <ImportResults run={run} />
        </>
      )}
    </section>
  )
}

const VERDICT_TEXT: Record<string, string> = {
  pass: 'pass: every client\'s bytes crossed the wire as reported',
  fail: 'fail',
  'no results': 'no client results imported yet',
}

function Report({ rep }: { rep: RunReport }) {
  const t = rep.total
  const sk = rep.skew
  // A column for creates only where a client reported some (Filecreate-like runs)
  const creates = rep.clients.some((c) => (c.reported.create_ops ?? 0) > 0)
  return (
    <div className="run-report" data-testid="run-report" data-verdict={rep.verdict}>
      <div className={`verdict verdict-${rep.verdict.replace(' ', '-')}`} data-testid="run-verdict">
        {VERDICT_TEXT[rep.verdict] ?? rep.verdict}
        {rep.failed.length > 0 && `: ${rep.failed.length} client${rep.failed.length > 1 ? 's' : ''} outside ±${rep.tolerance_pct} % (${addressList(rep.failed, rep.names)})`}
      </div>
      <Figures
        items={[
          { label: 'reported', testId: 'total-reported', value: `${formatBytes(t.reported_bytes)} · ${formatRate(t.reported_bytes_per_s, 'bytes/s')}` },
          { label: 'on the wire', testId: 'total-wire', value: `${formatBytes(t.wire_bytes)} · ${formatRate(t.wire_bytes_per_s, 'bytes/s')}` },
          { label: 'agreement', testId: 'total-agreement', value: agreementText(t.bytes_agreement_pct) },
          { label: 'window', value: `${rep.seconds} s` },
          {
            label: 'ramp-up / tail',
            title: "from the run's start until every client was busy / from the first client to finish to the run's end",
            value: `${sk.ramp_up_s ?? '–'} s / ${sk.tail_s ?? '–'} s`,
          },
        ]}
      />
      <div className="table-scroll">
        <table className="table" data-testid="run-clients" data-creates={creates}>
          <thead>
            <tr>
              <th>Client</th>
              <th className="num">Reported</th>
              <th className="num">On the wire</th>
              <th className="num">Agreement</th>
              <th className="num">Reported ops</th>
              <th className="num">Wire ops</th>
              {creates && (
                <th className="num" title="files the client created / CREATE calls on the wire">
                  Creates
                </th>
              )}
              <th className="num" title="reported reads that never reached the server">Client cache</th>
              <th className="num" title="first I/O after the run's start / last I/O before its end">Start / end offset</th>
              <th>Findings</th>
            </tr>
          </thead>
          <tbody>
            {rep.clients.map((c) => (
              <tr key={c.client} data-testid="run-client" data-client={c.client} data-passed={c.passed} className={c.passed ? '' : 'row-bad'}>
                <td>
                  <ClientLabel address={c.client} names={rep.names} />
                </td>
                <td className="num">{formatBytes(c.reported.bytes ?? 0)}</td>
                <td className="num">{formatBytes(c.wire.bytes ?? 0)}</td>
                <td className={`num agreement-${agreementLevel(c.bytes_agreement_pct, rep.tolerance_pct)}`} data-testid="client-agreement">
                  {agreementText(c.bytes_agreement_pct)}
                </td>
                <td className="num">{(c.reported.ops ?? 0).toLocaleString('en-US')}</td>
                <td className="num">{(c.wire.ops ?? 0).toLocaleString('en-US')}</td>
                {creates && (
                  <td className={`num agreement-${agreementLevel(c.creates_agreement_pct, rep.tolerance_pct)}`} data-testid="client-creates">
                    {(c.reported.create_ops ?? 0).toLocaleString('en-US')} / {(c.wire.create_ops ?? 0).toLocaleString('en-US')}
                  </td>
                )}
                <td className="num">{c.cache_read_bytes ? formatBytes(c.cache_read_bytes) : '–'}</td>
                <td className="num">
                  {c.start_offset_s ?? '–'} s / {c.end_offset_s ?? '–'} s
                </td>
                <td className="findings" data-testid="client-findings">
                  {c.reasons.length ? c.reasons.join('; ') : 'agrees'}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {rep.unreported_clients.length > 0 && (
        <div className="muted small" data-testid="run-unreported">
          On the wire in this window without a result: {addressList(rep.unreported_clients, rep.names)}
        </div>
      )}
      {(rep.notes ?? []).map((n) => (
        <div key={n} className="notice">
          {n}
        </div>
      ))}
    </div>
  )
}

function ImportResults({ run }: { run: RunPublic }) {
  const [text, setText] = useState('')
  const [format, setFormat] = useState<ResultsFormat>('simple')
  const [client, setClient] = useState('')
  const [problem, setProblem] = useState<string | null>(null)
  const imp = useImportResults()
  return (
    <form
      className="import-results"
      data-testid="import-results"
      onSubmit={(e) => {
        e.preventDefault()
        const req = resultsRequest(text, format, client)
        if ('error' in req) return setProblem(req.error)
        setProblem(null)
        imp.mutate({ id: run.id, request: req }, { onSuccess: () => setText('') })
      }}
    >
      <div className="panel-head">
        <h3>Import the clients' results</h3>
        <span className="muted small">a client's newer import replaces its older one</span>
      </div>
      <div className="import-row">
        <select aria-label="Results format" data-testid="import-format" value={format} onChange={(e) => setFormat(e.target.value as ResultsFormat)}>
          <option value="simple">JSON list</option>
          <option value="fio">fio JSON</option>
          <option value="csv">CSV</option>
        </select>
        {format === 'fio' && (
          <input aria-label="Client address" placeholder="client address (one-machine fio report)" value={client} onChange={(e) => setClient(e.target.value)} />
        )}
        <button className="button" type="submit" data-testid="import-submit" disabled={imp.isPending}>
          Import
        </button>
      </div>
      <textarea
        aria-label="Client results"
        data-testid="import-text"
        rows={5}
        value={text}
        onChange={(e) => setText(e.target.value)}
        placeholder={
          format === 'csv'
            ? 'client,read_bytes,write_bytes,read_ops,write_ops\n10.0.0.7,0,1073741824,0,131072'
            : format === 'fio'
              ? 'the output of fio --output-format=json'
              : '[{"client": "10.0.0.7", "write_bytes": 1073741824, "write_ops": 131072}]'
        }
      />
      {(problem || imp.error) && (
        <div className="error" data-testid="import-error">
          {problem ?? imp.error?.message}
        </div>
      )}
    </form>
  )
}

function Compare({ runs, view, pair }: { runs: RunPublic[]; view: RunsView; pair: [string, string] }) {
  const a = runs.find((r) => r.id === pair[0]) ?? null
  const b = runs.find((r) => r.id === pair[1]) ?? null
  const ra = useRunReport(a?.id ?? null, view.tolerance, !!a && !a.running)
  const rb = useRunReport(b?.id ?? null, view.tolerance, !!b && !b.running)
  const rows = useMemo(() => (ra.data && rb.data ? compareRows(ra.data, rb.data) : []), [ra.data, rb.data])
  const names = useMemo(() => ({ ...ra.data?.names, ...rb.data?.names }), [ra.data, rb.data])
  if (!a || !b) return <div className="error">A run to compare is gone (deleted?).</div>
  if (a.running || b.running) return <div className="notice">Both runs must have ended to be compared.</div>
  const setClient = (client: string | null) => navigate(`/runs${encodeRunsView({ ...view, client })}`, { replace: true })
  return (
    <section className="panel run-compare" aria-label="Compare runs" data-testid="run-compare-view">
      <div className="panel-head">
        <h2>
          <span data-testid="compare-a">{a.name}</span> <span className="muted">vs</span> <span data-testid="compare-b">{b.name}</span>
        </h2>
        <span className="muted small">
          {formatDateTime(a.start)} ({durationText(a.start, a.end, 0)}) · {formatDateTime(b.start)} ({durationText(b.start, b.end, 0)})
        </span>
      </div>
      {(ra.error || rb.error) && <div className="error">Cannot compute a report: {(ra.error ?? rb.error)!.message}</div>}
      <div className="table-scroll">
        <table className="table" data-testid="compare-clients">
          <thead>
            <tr>
              <th>Client</th>
              <th className="num">A bytes/s</th>
              <th className="num">B bytes/s</th>
              <th className="num">B vs A</th>
              <th className="num">A ops/s</th>
              <th className="num">B ops/s</th>
              <th className="num">B vs A</th>
              <th>Verdict A / B</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr
                key={r.client}
                data-testid="compare-row"
                data-client={r.client}
                className={view.client === r.client ? 'selected clickable' : 'clickable'}
                title="Show this client's latency in both heat maps"
                onClick={() => setClient(view.client === r.client ? null : r.client)}
              >
                <td>
                  <ClientLabel address={r.client} names={names} />
                </td>
                <td className="num">{formatRate(r.bytesA, 'bytes/s')}</td>
                <td className="num">{formatRate(r.bytesB, 'bytes/s')}</td>
                <td className="num" data-testid="bytes-delta">
                  {deltaText(r.bytesDeltaPct)}
                </td>
                <td className="num">{formatRate(r.opsA, 'ops/s')}</td>
                <td className="num">{formatRate(r.opsB, 'ops/s')}</td>
                <td className="num">{deltaText(r.opsDeltaPct)}</td>
                <td>
                  {r.passedA === null ? '–' : r.passedA ? 'pass' : 'fail'} / {r.passedB === null ? '–' : r.passedB ? 'pass' : 'fail'}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <RunHeatmaps runs={[a, b]} client={view.client ?? null} clientShown={view.client ? elementHover(CLIENT_DIM, view.client, names) : null} />
    </section>
  )
}

/** The two runs' latency heat maps, on one bucket axis and one colour scale once both are in. */
function RunHeatmaps({ runs, client, clientShown }: { runs: [RunPublic, RunPublic]; client: string | null; clientShown: string | null }) {
  const qa = useRunHeatmap(runs[0], client)
  const qb = useRunHeatmap(runs[1], client)
  const shared = useMemo(() => (qa.data && qb.data ? onSharedScales([qa.data, qb.data]) : null), [qa.data, qb.data])
  return (
    <div className="compare-heatmaps">
      {([qa, qb] as const).map((q, i) => {
        const side = i ? 'B' : 'A'
        return (
          <SimpleHeatmap
            key={side}
            result={shared ? shared.results[i] : q.data}
            colors={shared?.colors}
            error={q.error}
            title={`NFS latency, ${clientShown ?? 'all clients'}, run ${side} (${runs[i]!.name})`}
            testId={`compare-heatmap-${side}`}
            className="compare-heatmap"
          />
        )
      })}
    </div>
  )
}
