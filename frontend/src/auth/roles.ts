// Roles and what they reach: the server enforces it; the UI only avoids offering what would be refused.
export type Role = 'viewer' | 'operator' | 'admin'

export const ROLES: Role[] = ['viewer', 'operator', 'admin']

export const ROLE_HELP: Record<Role, string> = {
  viewer: 'reads statistics and worksheets',
  operator: 'also marks runs, suspends probes and edits worksheets',
  admin: 'also manages users, tokens and data',
}

export function can(role: Role, need: Role): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(need)
}

/** Why the sign-in failed, in words for the form (the server's detail when it gave one). */
export function signInError(status: number, detail: string | undefined, retryAfter: string | null): string {
  if (status === 401) return 'Wrong user name or password.'
  if (status === 429) {
    const s = Number(retryAfter)
    return `Too many attempts. Try again in ${Number.isFinite(s) && s > 0 ? `${s} s` : 'a minute'}.`
  }
  if (status === 422) return detail ?? 'Enter a user name and a password.'
  if (status === 0) return 'Loupe does not answer. Is the server running?'
  return detail ?? `Sign-in failed (${status}).`
}
