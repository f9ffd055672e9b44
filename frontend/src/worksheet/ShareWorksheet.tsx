// "Share": a link to this view that opens read-only, live or frozen at this moment, to copy.
import { useState } from 'react'
import { Popover } from '../components/Popover'
import { shareLink } from '../lib/share'
import type { WorksheetState } from '../state/url'

export function ShareWorksheet({ ws, onClose }: { ws: WorksheetState; onClose: () => void }) {
  const [freeze, setFreeze] = useState(!ws.paused)
  const [at] = useState(() => Date.now()) // the moment the dialog opened is the one frozen
  const [copied, setCopied] = useState<string | null>(null)
  const link = shareLink(location.origin, ws, freeze, at)
  async function copy() {
    try {
      await navigator.clipboard.writeText(link)
      setCopied('Copied.')
    } catch {
      setCopied('The browser refused the clipboard: select the link and copy it.')
    }
  }
  return (
    <Popover onClose={onClose} align="right" label="Share worksheet" className="form-popover" testId="share-dialog">
      <div className="form-title">Share this view</div>
      {!ws.paused && (
        <label className="alert-inline field">
          <input type="checkbox" checked={freeze} onChange={(e) => setFreeze(e.target.checked)} data-testid="share-freeze" />
          <span>Freeze the range as it is now (otherwise it stays live)</span>
        </label>
      )}
      <label className="field">
        <span>Link</span>
        <input readOnly value={link} onFocus={(e) => e.target.select()} data-testid="share-link" />
      </label>
      <div className="field-help">
        Anyone signed in to Loupe, viewers too, can open it. It opens read-only, with the same charts, filters and range; editing it makes
        their own copy.
      </div>
      <div className="form-actions">
        {copied && (
          <span className="muted small" role="status">
            {copied}
          </span>
        )}
        <button type="button" className="button button-primary" onClick={() => void copy()} data-testid="share-copy">
          Copy link
        </button>
      </div>
    </Popover>
  )
}
