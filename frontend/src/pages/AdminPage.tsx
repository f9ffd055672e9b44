// Admin: users and roles, bearer tokens (a new token's secret is shown once), data (AdminData) and the audit log.
// Every string here came from a user or an agent: React escapes it; nothing is set as HTML.
import { useState, type FormEvent } from 'react'
import {
  useAddUser, useAudit, useCreateToken, useDeleteUser, useRevokeToken, useTokens, useUpdateUser, useUsers,
  type TokenCreated,
} from '../api/admin'
import { ROLE_HELP, ROLES, type Role } from '../auth/roles'
import type { Me } from '../auth/session'
import { formatDateTime } from '../lib/format'
import { AdminClientNames } from './AdminClientNames'
import { AdminData } from './AdminData'
import { ErrorLine } from '../components/ErrorLine'

function RoleOptions() {
  return ROLES.map((r) => (
    <option key={r} value={r}>
      {r}
    </option>
  ))
}

function Users({ me }: { me: Me }) {
  const users = useUsers()
  const add = useAddUser()
  const update = useUpdateUser()
  const del = useDeleteUser()
  const [name, setName] = useState('')
  const [role, setRole] = useState<Role>('viewer')
  const [password, setPassword] = useState('')

  function submit(e: FormEvent) {
    e.preventDefault()
    add.mutate({ name, role, password }, { onSuccess: () => (setName(''), setPassword('')) })
  }
  function resetPassword(user: string) {
    const pw = prompt(`New password for ${user} (at least 10 characters):`)
    if (pw) update.mutate({ name: user, body: { password: pw } })
  }

  return (
    <section className="card admin-section" data-testid="admin-users">
      <div className="card-head">
        <h2 className="card-title">Users</h2>
      </div>
      <div className="admin-body">
        <ErrorLine error={add.error ?? update.error ?? del.error ?? users.error} />
        <table className="table">
          <thead>
            <tr>
              <th>User</th>
              <th>Role</th>
              <th>Created</th>
              <th>State</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {users.data?.map((u) => (
              <tr key={u.name} data-testid="user-row" data-user={u.name}>
                <td>{u.name}</td>
                <td>
                  <select
                    value={u.role}
                    aria-label={`role of ${u.name}`}
                    data-testid="user-role-select"
                    onChange={(e) => update.mutate({ name: u.name, body: { role: e.target.value as Role } })}
                  >
                    <RoleOptions />
                  </select>
                </td>
                <td>{formatDateTime(u.created_at)}</td>
                <td>{u.disabled ? 'disabled' : 'active'}</td>
                <td className="admin-actions">
                  <button className="button" onClick={() => resetPassword(u.name)}>
                    Reset password
                  </button>
                  <button className="button" onClick={() => update.mutate({ name: u.name, body: { disabled: !u.disabled } })} disabled={u.name === me.user}>
                    {u.disabled ? 'Enable' : 'Disable'}
                  </button>
                  <button
                    className="button"
                    disabled={u.name === me.user}
                    data-testid="user-delete"
                    onClick={() => confirm(`Delete user ${u.name}?`) && del.mutate(u.name)}
                  >
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        <form className="admin-form" onSubmit={submit} data-testid="user-add">
          <input placeholder="user name" aria-label="new user's name" value={name} onChange={(e) => setName(e.target.value)} data-testid="user-add-name" />
          <select value={role} onChange={(e) => setRole(e.target.value as Role)} data-testid="user-add-role" aria-label="role of the new user" title={ROLE_HELP[role]}>
            <RoleOptions />
          </select>
          <input type="password" aria-label="new user's password" placeholder="password (10+ characters)" autoComplete="new-password" value={password} onChange={(e) => setPassword(e.target.value)} data-testid="user-add-password" />
          <button className="button button-primary" type="submit" disabled={!name || !password || add.isPending} data-testid="user-add-submit">
            Add user
          </button>
          <span className="field-help">{role}: {ROLE_HELP[role]}</span>
        </form>
      </div>
    </section>
  )
}

const SCOPE_HELP = { ingest: 'an agent sends frames', metrics: 'Prometheus reads /metrics', api: 'a script acts with a role' }

function Tokens() {
  const tokens = useTokens()
  const create = useCreateToken()
  const revoke = useRevokeToken()
  const [name, setName] = useState('')
  const [scope, setScope] = useState<'ingest' | 'metrics' | 'api'>('ingest')
  const [role, setRole] = useState<Role>('viewer')
  const [made, setMade] = useState<TokenCreated | null>(null)

  function submit(e: FormEvent) {
    e.preventDefault()
    create.mutate({ name, scope, role: scope === 'api' ? role : null }, { onSuccess: (t) => (setMade(t), setName('')) })
  }

  return (
    <section className="card admin-section" data-testid="admin-tokens">
      <div className="card-head">
        <h2 className="card-title">Tokens</h2>
      </div>
      <div className="admin-body">
        <ErrorLine error={create.error ?? revoke.error ?? tokens.error} />
        {made && (
          <div className="token-secret" data-testid="token-secret">
            New token <b>{made.name}</b> ({made.scope}): <code data-testid="token-secret-value">{made.secret}</code>
            <span className="field-help"> Copy it now: it is shown only once. Agents take it as --token or LOUPE_INGEST_TOKEN.</span>
            <button className="button" onClick={() => setMade(null)}>
              Done
            </button>
          </div>
        )}
        <table className="table">
          <thead>
            <tr>
              <th>Name</th>
              <th>Scope</th>
              <th>From</th>
              <th>Created</th>
              <th>Last used</th>
              <th>State</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {tokens.data?.map((t) => (
              <tr key={t.id} data-testid="token-row" data-token={t.name} data-state={t.revoked_at ? 'revoked' : 'live'}>
                <td>{t.name}</td>
                <td>{t.scope + (t.role ? ` (${t.role})` : '')}</td>
                <td>{t.origin === 'api' ? t.created_by : t.origin === 'config' ? 'environment' : 'data dir file'}</td>
                <td>{formatDateTime(t.created_at)}</td>
                <td>{t.last_used ? formatDateTime(t.last_used) : 'never'}</td>
                <td>{t.revoked_at ? `revoked by ${t.revoked_by} ${formatDateTime(t.revoked_at)}` : 'live'}</td>
                <td>
                  {!t.revoked_at && (
                    <button
                      className="button"
                      data-testid="token-revoke"
                      onClick={() => confirm(`Revoke token ${t.name}? Whatever uses it is refused from its next request.`) && revoke.mutate(t.id)}
                    >
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        <form className="admin-form" onSubmit={submit} data-testid="token-add">
          <input placeholder="name, e.g. the agent's host" aria-label="new token's name" value={name} onChange={(e) => setName(e.target.value)} data-testid="token-add-name" />
          <select value={scope} onChange={(e) => setScope(e.target.value as typeof scope)} data-testid="token-add-scope" aria-label="scope of the new token">
            {(['ingest', 'metrics', 'api'] as const).map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
          {scope === 'api' && (
            <select value={role} onChange={(e) => setRole(e.target.value as Role)} aria-label="role of the api token">
              <RoleOptions />
            </select>
          )}
          <button className="button button-primary" type="submit" disabled={!name || create.isPending} data-testid="token-add-submit">
            Make token
          </button>
          <span className="field-help">{scope}: {SCOPE_HELP[scope]}</span>
        </form>
      </div>
    </section>
  )
}

function Audit() {
  const audit = useAudit()
  return (
    <section className="card admin-section" data-testid="admin-audit">
      <div className="card-head">
        <h2 className="card-title">Audit log</h2>
        <span className="card-badges field-help">newest first, last 200</span>
      </div>
      <div className="admin-body table-scroll">
        <ErrorLine error={audit.error} />
        <table className="table">
          <thead>
            <tr>
              <th>When</th>
              <th>Who</th>
              <th>What</th>
              <th>Target</th>
              <th>Detail</th>
              <th>From</th>
            </tr>
          </thead>
          <tbody>
            {audit.data?.map((e) => (
              <tr key={e.id} data-testid="audit-row" data-action={e.action}>
                <td>{formatDateTime(e.ts)}</td>
                <td>{e.actor}</td>
                <td>{e.action}</td>
                <td>{e.target}</td>
                <td>{e.detail}</td>
                <td>{e.address}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  )
}

export function AdminPage({ me }: { me: Me }) {
  if (me.role !== 'admin') return <div className="empty big">Only admins manage users, tokens and data.</div>
  return (
    <main className="page admin-page" data-testid="admin-page">
      <Users me={me} />
      <Tokens />
      <AdminData />
      <AdminClientNames />
      <Audit />
    </main>
  )
}
