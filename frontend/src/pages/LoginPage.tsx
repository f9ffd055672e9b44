// Sign-in: user name and password; errors say what went wrong (wrong password, too many attempts).
import { useQueryClient } from '@tanstack/react-query'
import { useState, type FormEvent } from 'react'
import { api } from '../api/client'
import { signInError } from '../auth/roles'
import { switchSession } from '../auth/session'

export function LoginPage() {
  const qc = useQueryClient()
  const [user, setUser] = useState('')
  const [password, setPassword] = useState('')
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)

  async function submit(e: FormEvent) {
    e.preventDefault()
    setBusy(true)
    setError(null)
    try {
      const r = await api.POST('/api/v1/auth/login', { body: { user, password } })
      if (r.data && r.response.ok) {
        switchSession(qc, r.data)
        return
      }
      const detail = (r.error as { detail?: unknown } | undefined)?.detail
      setError(signInError(r.response.status, typeof detail === 'string' ? detail : undefined, r.response.headers.get('retry-after')))
    } catch {
      setError(signInError(0, undefined, null))
    } finally {
      setBusy(false)
    }
  }

  return (
    <main className="login-page">
      <form className="card login-card" onSubmit={submit} data-testid="login-form">
        <h1 className="login-title">
          <svg viewBox="0 0 16 16" width="22" height="22" aria-hidden>
            <circle cx="6.5" cy="6.5" r="4.5" fill="none" stroke="currentColor" strokeWidth="2" />
            <path d="M10 10l4.5 4.5" stroke="currentColor" strokeWidth="2.2" strokeLinecap="round" />
          </svg>
          Sign in to Loupe
        </h1>
        <label className="field">
          <span>User</span>
          <input name="user" autoComplete="username" autoFocus value={user} onChange={(e) => setUser(e.target.value)} data-testid="login-user" />
        </label>
        <label className="field">
          <span>Password</span>
          <input
            name="password"
            type="password"
            autoComplete="current-password"
            value={password}
            onChange={(e) => setPassword(e.target.value)}
            data-testid="login-password"
          />
        </label>
        {error && (
          <div className="error" role="alert" data-testid="login-error">
            {error}
          </div>
        )}
        <button className="button button-primary login-submit" type="submit" disabled={busy || !user || !password} data-testid="login-submit">
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        <p className="field-help login-help">
          The first start of the server prints the password of <code>admin</code> (or takes it from LOUPE_ADMIN_PASSWORD).
        </p>
      </form>
    </main>
  )
}

/** `loupe serve --demo` prints a link with ?login=TOKEN: trade it for a session, then drop it from the address. */
export async function signInWithDemoLink(): Promise<boolean> {
  const params = new URLSearchParams(location.search)
  const token = params.get('login')
  if (!token) return false
  params.delete('login')
  const rest = params.toString()
  history.replaceState(null, '', location.pathname + (rest ? `?${rest}` : ''))
  const r = await api.POST('/api/v1/auth/link', { body: { token } })
  return r.response.ok // the app asks /auth/me next, which brings the CSRF token
}
