// The page frame: sign-in first; then the header with navigation, sources, the demo label and
// the account corner; the page by path.
import { useEffect, useState } from 'react'
import { useAlertRules } from './api/alerts'
import { openCount } from './lib/alerts'
import { useSources, useStatus } from './api/hooks'
import { useLiveState } from './api/live'
import { useMe, type Me } from './auth/session'
import { formatClock } from './lib/format'
import { SourcesMenu } from './components/SourcesMenu'
import { UserMenu } from './components/UserMenu'
import { AdminPage } from './pages/AdminPage'
import { AlertsPage } from './pages/AlertsPage'
import { ClientPage } from './pages/ClientPage'
import { LoginPage, signInWithDemoLink } from './pages/LoginPage'
import { RunsPage, openRuns } from './pages/RunsPage'
import { SourcesPage, openSources } from './pages/SourcesPage'
import { StatusPage } from './pages/StatusPage'
import { WorksheetPage } from './pages/WorksheetPage'
import { navigate, useLocation } from './state/router'
import { lastWorksheet, openWorksheet } from './state/useWorksheet'

/** Open alerts beside the Alerts link, so they are seen from any page. */
function OpenAlerts() {
  const rules = useAlertRules()
  const n = openCount(rules.data?.rules)
  return n ? (
    <span className="pill pill-warn" data-testid="nav-alerts-open" title={`${n} alert${n === 1 ? '' : 's'} open`}>
      {n}
    </span>
  ) : null
}

function DemoLabel() {
  const { data: status } = useStatus()
  const { data: sources } = useSources()
  const hosts = new Set([...(status?.demo_hosts ?? []), ...(sources?.sources.filter((s) => s.demo).map((s) => s.host ?? s.name) ?? [])])
  if (!hosts.size) return null
  return (
    <span className="badge badge-demo header-demo" data-testid="demo-label" title="Synthetic figures from a simulated NAS, for trying Loupe out">
      demo data: {[...hosts].join(', ')}
    </span>
  )
}

/** While the store cannot take frames (e.g. its disk is full): on every page, until ingest works again. */
function IngestBanner() {
  const { data: status } = useStatus()
  if (!status?.ingest_error) return null
  const since = status.ingest_error_since ? ` since ${formatClock(status.ingest_error_since)}` : ''
  return (
    <div className="error ingest-banner" role="alert" data-testid="ingest-error">
      <b>Ingest is failing{since}:</b> {status.ingest_error}. Charts show what was stored before; agents keep their frames
      and ingest resumes by itself once the cause is gone.
    </div>
  )
}

const LIVE_LABEL = { idle: 'idle', connecting: 'connecting', open: 'live', closed: 'reconnecting' } as const

function LiveIndicator() {
  const state = useLiveState()
  const dot = state === 'open' ? 'on' : state === 'closed' ? 'bad' : ''
  const title = state === 'idle' ? 'no chart needs live updates (paused or none open)' : `live updates: ${LIVE_LABEL[state]}`
  return (
    <span className="live-state" title={title} data-testid="live-state">
      <span className={`live-dot ${dot}`} /> {LIVE_LABEL[state]}
    </span>
  )
}

// The header's links: each page and how to open it (some come back to the view last shown).
const NAV = [
  { page: 'worksheet', href: '/', label: 'Worksheet', open: () => openWorksheet(lastWorksheet()) },
  { page: 'status', href: '/status', label: 'Status', open: () => navigate('/status') },
  { page: 'sources', href: '/sources', label: 'Sources', open: () => openSources() },
  { page: 'runs', href: '/runs', label: 'Runs', open: () => openRuns() },
  { page: 'alerts', href: '/alerts', label: 'Alerts', open: () => navigate('/alerts') },
  { page: 'admin', href: '/admin', label: 'Admin', open: () => navigate('/admin'), role: 'admin' },
] as const

const PAGES: Record<string, string> = { '/status': 'status', '/sources': 'sources', '/runs': 'runs', '/alerts': 'alerts', '/clients': 'client', '/admin': 'admin' }

export function App() {
  const [linkDone, setLinkDone] = useState(false)
  const me = useMe(linkDone)
  useEffect(() => {
    signInWithDemoLink().finally(() => setLinkDone(true))
  }, [])
  if (!linkDone || me.isPending) return <div className="empty big">Loading…</div>
  if (me.isError) return <div className="error">Loupe does not answer: {String(me.error.message)}</div>
  if (!me.data) return <LoginPage />
  return <Shell me={me.data} />
}

function Shell({ me }: { me: Me }) {
  const { path } = useLocation()
  const page = PAGES[path.replace(/\/+$/, '')] ?? 'worksheet'
  const nav = NAV.filter((n) => !('role' in n) || me.role === n.role)
  return (
    <div className="app">
      <header className="header">
        <a
          className="brand"
          href="/"
          onClick={(e) => {
            e.preventDefault()
            openWorksheet(lastWorksheet())
          }}
        >
          <svg viewBox="0 0 16 16" width="18" height="18" aria-hidden>
            <circle cx="6.5" cy="6.5" r="4.5" fill="none" stroke="currentColor" strokeWidth="2" />
            <path d="M10 10l4.5 4.5" stroke="currentColor" strokeWidth="2.2" strokeLinecap="round" />
          </svg>
          Loupe
        </a>
        <nav className="nav">
          {nav.map((n) => (
            <a
              key={n.page}
              href={n.href}
              className={page === n.page ? 'active' : ''}
              data-testid={`nav-${n.page}`}
              onClick={(e) => {
                e.preventDefault()
                n.open()
              }}
            >
              {n.label}
              {n.page === 'alerts' && <OpenAlerts />}
            </a>
          ))}
        </nav>
        <div className="header-right">
          <DemoLabel />
          <LiveIndicator />
          <SourcesMenu />
          <UserMenu me={me} />
        </div>
      </header>
      <IngestBanner />
      {page === 'status' ? (
        <StatusPage />
      ) : page === 'sources' ? (
        <SourcesPage />
      ) : page === 'runs' ? (
        <RunsPage />
      ) : page === 'client' ? (
        <ClientPage />
      ) : page === 'alerts' ? (
        <AlertsPage me={me} />
      ) : page === 'admin' ? (
        <AdminPage me={me} />
      ) : (
        <WorksheetPage />
      )}
    </div>
  )
}
