// The worksheet in the URL, decoded once per change, with updates that push history.
import { useCallback, useMemo } from 'react'
import { navigate, useLocation } from './router'
import { decodeWorksheet, encodeWorksheet, type WorksheetState } from './url'

/** The worksheet last shown, so that the status page can add to it. */
let lastSearch = ''

export function lastWorksheet(): WorksheetState {
  return decodeWorksheet(lastSearch).state
}

export function openWorksheet(ws: WorksheetState, opts: { replace?: boolean } = {}) {
  navigate(`/${encodeWorksheet(ws)}`, opts)
}

export function useWorksheet() {
  const { search } = useLocation()
  lastSearch = search
  const { state, warnings } = useMemo(() => decodeWorksheet(search), [search])
  const update = useCallback(
    (fn: (ws: WorksheetState) => WorksheetState, opts: { replace?: boolean } = {}) => {
      openWorksheet(fn(decodeWorksheet(location.search).state), opts)
    },
    [],
  )
  return { ws: state, warnings, update }
}
