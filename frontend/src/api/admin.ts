// Admin reads and writes (users, tokens, audit) through TanStack Query.
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { api, unwrap, type Schemas } from './client'

export type UserPublic = Schemas['UserPublic']
export type TokenPublic = Schemas['TokenPublic']
export type TokenCreated = Schemas['TokenCreated']
export type AuditEntry = Schemas['AuditEntry']

export function useUsers() {
  return useQuery({ queryKey: ['users'], queryFn: async () => unwrap(await api.GET('/api/v1/users')).users })
}

export function useTokens() {
  return useQuery({ queryKey: ['tokens'], queryFn: async () => unwrap(await api.GET('/api/v1/tokens')).tokens })
}

export function useAudit() {
  return useQuery({
    queryKey: ['audit'],
    queryFn: async () => unwrap(await api.GET('/api/v1/audit', { params: { query: { limit: 200 } } })).entries,
    refetchInterval: 10_000,
  })
}

/** A write that refreshes the lists it changes, and the audit log it adds to. */
export function useAdminMutation<A, R>(fn: (a: A) => Promise<R>, lists: string[]) {
  const qc = useQueryClient()
  return useMutation({
    mutationFn: fn,
    onSettled: () => [...lists, 'audit'].forEach((k) => qc.invalidateQueries({ queryKey: [k] })),
  })
}

export function useAddUser() {
  return useAdminMutation(async (body: Schemas['UserCreate']) => unwrap(await api.POST('/api/v1/users', { body })), ['users'])
}

export function useUpdateUser() {
  return useAdminMutation(
    async ({ name, body }: { name: string; body: Schemas['UserUpdate'] }) =>
      unwrap(await api.PATCH('/api/v1/users/{name}', { params: { path: { name } }, body })),
    ['users'],
  )
}

export function useDeleteUser() {
  return useAdminMutation(async (name: string) => {
    const r = await api.DELETE('/api/v1/users/{name}', { params: { path: { name } } })
    if (!r.response.ok) unwrap(r)
  }, ['users'])
}

export function useCreateToken() {
  return useAdminMutation(async (body: Schemas['TokenCreate']) => unwrap(await api.POST('/api/v1/tokens', { body })), ['tokens'])
}

export function useRevokeToken() {
  return useAdminMutation(
    async (id: number) => unwrap(await api.POST('/api/v1/tokens/{token_id}/revoke', { params: { path: { token_id: id } } })),
    ['tokens'],
  )
}

export type RetentionPublic = Schemas['RetentionPublic']
export type DataDeleted = Schemas['DataDeleted']

export function useRetention() {
  return useQuery({ queryKey: ['retention'], queryFn: async () => unwrap(await api.GET('/api/v1/retention')), refetchInterval: 30_000 })
}

export function useSetRetention() {
  return useAdminMutation(async (body: Schemas['RetentionUpdate']) => unwrap(await api.PUT('/api/v1/retention', { body })), ['retention'])
}

/** A dry run only counts; a real one also refreshes what the store holds and the hosts it knows. */
export function useDeleteData() {
  return useAdminMutation(async (body: Schemas['DataDelete']) => unwrap(await api.POST('/api/v1/data/delete', { body })), ['retention', 'status', 'query', 'heatmap', 'members'])
}
