// A tiny history router: the path picks the page, the query holds the worksheet.
import { useSyncExternalStore } from 'react'

const EVENT = 'loupe:navigate'

function subscribe(fn: () => void): () => void {
  window.addEventListener('popstate', fn)
  window.addEventListener(EVENT, fn)
  return () => {
    window.removeEventListener('popstate', fn)
    window.removeEventListener(EVENT, fn)
  }
}

export function useLocation(): { path: string; search: string } {
  const href = useSyncExternalStore(subscribe, () => location.pathname + location.search)
  const q = href.indexOf('?')
  return q < 0 ? { path: href, search: '' } : { path: href.slice(0, q), search: href.slice(q) }
}

export function navigate(to: string, opts: { replace?: boolean } = {}) {
  if (to === location.pathname + location.search) return
  if (opts.replace) history.replaceState(null, '', to)
  else history.pushState(null, '', to)
  window.dispatchEvent(new Event(EVENT))
}
