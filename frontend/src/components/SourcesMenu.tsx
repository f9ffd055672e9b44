// Header menu: every source agents reported, with state and reason.
import { useState } from 'react'
import { useSources } from '../api/hooks'
import { familySummary } from '../lib/empty'
import { Popover } from './Popover'
import { SourceTable } from './SourceTable'

export function SourcesMenu() {
  const { data, error } = useSources()
  const [open, setOpen] = useState(false)
  const active = data?.sources.filter((s) => s.state === 'active').length ?? 0
  return (
    <div className="anchor">
      <button className="header-button" onClick={() => setOpen(!open)} data-testid="sources-button" aria-expanded={open}>
        Sources{' '}
        <span className={`pill ${data && active === data.sources.length ? 'pill-ok' : 'pill-warn'}`}>
          {data ? `${active}/${data.sources.length}` : error ? '!' : '…'}
        </span>
      </button>
      {open && (
        <Popover onClose={() => setOpen(false)} align="right" label="Sources" className="sources-popover" testId="sources-menu">
          {error && <div className="error">Cannot read sources: {String((error as Error).message)}</div>}
          {data && (
            <>
              <div className="menu-title">
                Families: <span className="mono">{familySummary(data)}</span>
              </div>
              <SourceTable sources={data.sources} />
            </>
          )}
        </Popover>
      )}
    </div>
  )
}
