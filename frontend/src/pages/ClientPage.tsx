// Why is this client slow? Its verdict with the reasons, each opening the chart behind it, and
// the facts: operations by type, in flight, latency beside the other clients', busy time, sizes.
// The client's address and every reason are rendered as text.
import { useMemo } from 'react'
import { useDiagnosis, useHeatmap } from '../api/hooks'
import { SimpleHeatmap } from '../charts/heatmap/Simple'
import { Figures } from '../components/Figures'
import {
  DIAG_RANGES,
  decodeClientView,
  diagnosisWindow,
  encodeClientView,
  evidenceWorksheet,
  latencyText,
  linkBusyText,
  linkShareText,
  verdictLevel,
  type ClientView,
} from '../lib/clients'
import { formatBytes, formatDateTime, formatRate } from '../lib/format'
import { makeStatistic } from '../state/url'
import { navigate, useLocation } from '../state/router'
import { openWorksheet } from '../state/useWorksheet'

/** Disks in the table, most I/Os in flight first: the busiest are the suspects. */
const DISKS_SHOWN = 5

export function openClient(view: ClientView) {
  navigate(`/clients${encodeClientView(view)}`)
}

export function ClientPage() {
  const { search } = useLocation()
  const { view, warnings } = useMemo(() => decodeClientView(search), [search])
  const win = diagnosisWindow(view)
  const d = useDiagnosis(view.client, win, view.at === null)
  const stat = useMemo(() => makeStatistic('nfs.ops', 'latency', { client: [view.client ?? ''] }, 'heatmap'), [view.client])
  const hm = useHeatmap(stat, { range: view.range, paused: view.at !== null, at: view.at })
  const set = (v: ClientView) => navigate(`/clients${encodeClientView(v)}`, { replace: true })
  const data = d.data
  // Named by the diagnosis (or the heat map, whichever answers first); the address stays in the URL.
  const name = view.client ? (data?.names?.[view.client] ?? hm.data?.names?.[view.client]) : undefined
  const shown = name ?? view.client
  return (
    <main className="page client-page" data-testid="client-page">
      <div className="toolbar">
        <div className="toolbar-group">
          <h1 className="ws-name">
            Why is{' '}
            <span className={name ? '' : 'mono'} data-testid="client-name" title={name ? view.client! : undefined}>
              {shown ?? '…'}
            </span>
            {name && (
              <span className="mono muted client-address" data-testid="client-address">
                {' '}
                ({view.client})
              </span>
            )}{' '}
            slow?
          </h1>
        </div>
        <div className="segmented" role="group" aria-label="Window">
          {DIAG_RANGES.map((r) => (
            <button key={r.id} className={view.range === r.id ? 'active' : ''} aria-pressed={view.range === r.id} onClick={() => set({ ...view, range: r.id })}>
              {r.label}
            </button>
          ))}
        </div>
        <div className="muted small">{view.at === null ? 'live, re-read every 10 s' : `until ${formatDateTime(view.at)}`}</div>
      </div>
      {warnings.length > 0 && <div className="notice">{warnings.join('; ')}</div>}
      {d.error && <div className="error">Cannot diagnose: {d.error.message}</div>}
      {view.client && !data && !d.error && <div className="loading">Looking at {shown}…</div>}
      {data && (
        <>
          <section className={`panel verdict-panel verdict-${verdictLevel(data.verdict)}`} data-testid="client-verdict" data-verdict={data.verdict} data-start={data.start} data-end={data.end}>
            <div className="panel-head">
              <h2>{data.verdict}</h2>
              <span className="muted small">
                {formatDateTime(data.start)} – {formatDateTime(data.end)} ({data.tier} tier)
              </span>
            </div>
            <ul className="reasons">
              {data.reasons.map((r) => (
                <li key={r.text} data-testid="client-reason">
                  <span>{r.text}</span>{' '}
                  <button className="button small" data-testid="reason-chart" onClick={() => openWorksheet(evidenceWorksheet(r.statistic, view))}>
                    show chart
                  </button>
                </li>
              ))}
            </ul>
          </section>
          <Figures
            items={[
              { label: 'operations', testId: 'client-ops', value: formatRate(data.ops_per_s, 'ops/s') },
              { label: 'bytes', value: formatRate(data.bytes_per_s, 'bytes/s') },
              { label: 'in flight', testId: 'client-inflight', title: "mean operations in flight at the server (Little's law)", value: data.inflight.toPrecision(3) },
              { label: 'busy', value: `${Math.round(100 * data.busy_fraction)} % of the time` },
              { label: 'mean I/O', value: data.mean_io_bytes === null || data.mean_io_bytes === undefined ? '–' : formatBytes(data.mean_io_bytes) },
              {
                label: 'TCP retransmits',
                value: data.retransmits_per_s === null || data.retransmits_per_s === undefined ? 'no data' : formatRate(data.retransmits_per_s, 'retransmits/s'),
              },
              {
                label: 'on the wire',
                testId: 'client-wire',
                title: 'its bytes both ways, from the socket probe',
                value: data.wire_bytes_per_s === null || data.wire_bytes_per_s === undefined ? 'no data' : formatRate(data.wire_bytes_per_s, 'bytes/s'),
              },
              {
                label: 'share of the link',
                testId: 'client-link',
                title: "its busier direction, as a share of the speed the kernel reports for the server's interface its route names",
                value: linkShareText(data.link),
              },
              {
                label: 'link busy',
                testId: 'client-link-busy',
                title: 'everything through that interface, its busier direction (out of or into the server), of its speed',
                value: linkBusyText(data.link),
              },
              {
                label: 'share of NFS traffic',
                testId: 'client-share',
                title: "its NFS bytes, of every client's on the server",
                value: data.traffic_share === null || data.traffic_share === undefined ? '–' : `${(100 * data.traffic_share).toPrecision(2)} %`,
              },
            ]}
          />
          <section className="panel">
            <table className="table" data-testid="client-ops-table">
              <thead>
                <tr>
                  <th>Operation</th>
                  <th className="num">ops/s</th>
                  <th className="num">bytes/s</th>
                  <th className="num">in flight</th>
                  <th className="num">mean latency</th>
                  <th className="num">other clients' latency</th>
                </tr>
              </thead>
              <tbody>
                {data.by_op.map((o) => (
                  <tr key={o.op} data-testid="client-op" data-op={o.op}>
                    <td>{o.op}</td>
                    <td className="num">{formatRate(o.ops_per_s, 'ops/s')}</td>
                    <td className="num">{formatRate(o.bytes_per_s, 'bytes/s')}</td>
                    <td className="num">{o.inflight.toPrecision(3)}</td>
                    <td className="num">{latencyText(o.mean_latency_s)}</td>
                    <td className="num">{latencyText(o.others_latency_s)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            <SimpleHeatmap
              result={hm.data}
              error={hm.error}
              title={`Server latency of ${shown}'s operations`}
              testId="client-latency"
              className="client-latency"
            />
            {data.disks.length > 0 && (
              <table className="table" data-testid="client-disks">
                <thead>
                  <tr>
                    <th>Server disk</th>
                    <th className="num">I/Os per second</th>
                    <th className="num" title="mean I/Os in flight (Little's law)">in flight</th>
                    <th className="num">mean latency</th>
                  </tr>
                </thead>
                <tbody>
                  {data.disks.slice(0, DISKS_SHOWN).map((d) => (
                    <tr key={d.disk} data-testid="client-disk" data-disk={d.disk}>
                      <td>{d.disk}</td>
                      <td className="num">{formatRate(d.ops_per_s, 'ops/s')}</td>
                      <td className="num">{d.inflight.toPrecision(3)}</td>
                      <td className="num">{latencyText(d.mean_latency_s)}</td>
                    </tr>
                  ))}
                  {data.disks.length > DISKS_SHOWN && (
                    <tr>
                      <td colSpan={4} className="muted small" data-testid="client-disks-more">
                        and {data.disks.length - DISKS_SHOWN} more disks with fewer I/Os in flight
                      </td>
                    </tr>
                  )}
                </tbody>
              </table>
            )}
            {data.size_mix.length > 0 && (
              <div className="size-mix" data-testid="client-size-mix">
                <span className="muted small">reads and writes by size: </span>
                {data.size_mix.map(([e, share]) => (
                  <span key={e} className="badge">
                    ≥ {formatBytes(2 ** e!)}: {Math.round(100 * share!)} %
                  </span>
                ))}
              </div>
            )}
          </section>
        </>
      )}
    </main>
  )
}
