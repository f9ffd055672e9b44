// The header's account corner: the colour theme, who is signed in, with which role, and Sign out.
import { useQueryClient } from '@tanstack/react-query'
import { api } from '../api/client'
import { switchSession, type Me } from '../auth/session'
import { ThemeControl } from './ThemeControl'

export function UserMenu({ me }: { me: Me }) {
  const qc = useQueryClient()
  async function signOut() {
    await api.POST('/api/v1/auth/logout')
    switchSession(qc, null)
  }
  return (
    <span className="user-menu" data-testid="user-menu">
      <ThemeControl />
      <span className="user-name" title={`signed in as ${me.user} (${me.role})`} data-testid="user-name">
        {me.user}
      </span>
      <span className="badge user-role" data-testid="user-role">
        {me.role}
      </span>
      <button className="header-button" onClick={signOut} data-testid="sign-out">
        Sign out
      </button>
    </span>
  )
}
