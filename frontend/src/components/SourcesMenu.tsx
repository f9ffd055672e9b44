// Header menu: every source agents reported, with state and reason.
import { useState } from 'react'
import { useSources } from '../api/hooks'
import { familySummary } from '../lib/empty'
import { isHealthy } from '../lib/sources'
import { openSources } from '../pages/SourcesPage'
import { Popover } from './Popover'
import { SourceTable } from './SourceTable'

export function SourcesMenu() {
  const { data, error } = useSources()
  const [open, setOpen] = useState(false)
  const active = data?.sources.filter((s) => s.state === 'active').length ?? 0
  // Standby and suspended sources are as intended; only off and error ones need a look.
  const allWell = data?.sources.every((s) => isHealthy(s.state)) ?? false
  return (
    <div className="anchor">
      <button className="header-button" onClick={() => setOpen(!open)} data-testid="sources-button" aria-expanded={open}>
        Sources{' '}
        <span className={`pill ${allWell ? 'pill-ok' : 'pill-warn'}`}>
          {data ? `${active}/${data.sources.length}` : error ? '!' : '…'}
        </span>
      </button>
      {open && (
        <Popover onClose={() => setOpen(false)} align="right" label="Sources" className="sources-popover" testId="sources-menu">
          {error && <div className="error">Cannot read sources: {String((error as Error).message)}</div>}
          {data && (
            <>
              <div className="menu-title">
                Families: <span className="mono">{familySummary(data)}</span>{' '}
                <button
                  className="icon-button"
                  data-testid="sources-menu-open-page"
                  onClick={() => {
                    setOpen(false)
                    openSources()
                  }}
                >
                  cost, suspend and resume →
                </button>
              </div>
              <SourceTable sources={data.sources} />
            </>
          )}
        </Popover>
      )}
    </div>
  )
}
