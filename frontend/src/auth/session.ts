// The signed-in session: who, which role, and the CSRF token every write must echo.
// The cookie itself is HttpOnly: this code never sees it.
import { useQuery, useQueryClient, type QueryClient } from '@tanstack/react-query'
import { api, ApiError, type Schemas } from '../api/client'

export type Me = Schemas['Me']

let csrf: string | null = null
let onSignedOut: (() => void) | null = null

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/** Headers for a write made with plain fetch (openapi-fetch calls get them from the middleware). */
export function csrfHeaders(): Record<string, string> {
  return csrf ? { 'X-CSRF-Token': csrf } : {}
}

api.use({
  onRequest({ request }) {
    if (csrf && UNSAFE.has(request.method)) request.headers.set('X-CSRF-Token', csrf)
    return request
  },
  onResponse({ request, response }) {
    // A session that ended (expired, signed out elsewhere, role changed) sends the page back to sign-in.
    if (response.status === 401 && !new URL(request.url).pathname.startsWith('/api/v1/auth/')) onSignedOut?.()
    return response
  },
})

async function fetchMe(): Promise<Me | null> {
  const r = await api.GET('/api/v1/auth/me')
  if (r.response.status === 401) {
    csrf = null
    return null
  }
  if (!r.data) throw new ApiError(`${r.response.status} ${r.response.statusText}`, r.response.status)
  csrf = r.data.csrf_token ?? null
  return r.data
}

/** Who is signed in: null when no one is (the app shows the sign-in page). Not asked until
 * `enabled`: a fetch already in flight (without the cookie) would otherwise answer for the new session. */
export function useMe(enabled = true) {
  const qc = useQueryClient()
  onSignedOut = () => switchSession(qc, null)
  return useQuery({ queryKey: ['me'], queryFn: fetchMe, staleTime: 60_000, refetchInterval: 5 * 60_000, retry: false, enabled })
}

/** A new session, or none: drop everything read under the old one, keep the `me` entry the app watches. */
export function switchSession(qc: QueryClient, me: Me | null) {
  csrf = me?.csrf_token ?? null
  qc.removeQueries({ predicate: (q) => q.queryKey[0] !== 'me' })
  qc.setQueryData(['me'], me)
}
