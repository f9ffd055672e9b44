// The client name mapping table and the naming policy in force (Admin → Client names).
import { useQuery } from '@tanstack/react-query'
import { useAdminMutation } from './admin'
import { api, unwrap, type Schemas } from './client'

export type ClientNamesTable = Schemas['ClientNamesTable']
export type ClientNameEntry = Schemas['ClientNameEntry']
export type ClientNamesPolicy = Schemas['ClientNamesPolicy']

export function useClientNames() {
  return useQuery({ queryKey: ['client-names'], queryFn: async () => unwrap(await api.GET('/api/v1/client-names')) })
}

export function useNamesPolicy() {
  return useQuery({ queryKey: ['client-names-policy'], queryFn: async () => unwrap(await api.GET('/api/v1/client-names/policy')), refetchInterval: 10_000 })
}

/** Replace the table; every result that names clients is read again. */
export function useSetClientNames() {
  return useAdminMutation(
    async (entries: ClientNameEntry[]) => unwrap(await api.PUT('/api/v1/client-names', { body: { entries } })),
    ['client-names', 'client-names-policy', 'query', 'heatmap', 'members', 'diagnosis', 'run-report'],
  )
}
