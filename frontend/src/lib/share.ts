// Share links: the worksheet's whole view in a URL that opens read-only. Pure; tested beside.
import { encodeWorksheet, pauseTime, type WorksheetState } from '../state/url'

/** The link to `ws` as shown now. `freeze`: the range as it is at `nowMs` (a live view otherwise
 * stays live for whoever opens it). */
export function shareLink(origin: string, ws: WorksheetState, freeze: boolean, nowMs: number): string {
  const frozen = freeze && !ws.paused ? { paused: true, at: pauseTime(nowMs) } : {}
  return `${origin}/${encodeWorksheet({ ...ws, ...frozen, readOnly: true })}`
}

/** A shared view made editable: a copy, so saving it never overwrites the sender's worksheet. */
export function editableCopy(ws: WorksheetState): WorksheetState {
  return { ...ws, readOnly: false, id: null }
}
