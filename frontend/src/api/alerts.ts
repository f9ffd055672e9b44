// Alert rules and the event log through TanStack Query.
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { api, unwrap, type AlertRuleBody, type Schemas } from './client'

/** The rules with their state, and the bounds of per-element rules. */
export function useAlertRules() {
  return useQuery({ queryKey: ['alerts'], queryFn: async () => unwrap(await api.GET('/api/v1/alerts')), refetchInterval: 5_000 })
}

type EventQuery = { start?: string; end?: string; kind?: Schemas['EventPublic']['kind'][]; limit?: number; open_before?: boolean }

/** The event log, newest first; refreshed every few seconds so a firing alert shows without a reload. */
export function useEvents(query: EventQuery, refetchMs: number | false = 5_000) {
  return useQuery({
    queryKey: ['events', query],
    queryFn: async () => unwrap(await api.GET('/api/v1/events', { params: { query } })),
    refetchInterval: refetchMs,
  })
}

/** One event (a webhook post's link opens the Alerts page on it), with its worksheet link. */
export function useEvent(eventId: number | null) {
  return useQuery({
    queryKey: ['events', 'one', eventId],
    enabled: eventId !== null,
    queryFn: async () => unwrap(await api.GET('/api/v1/events/{event_id}', { params: { path: { event_id: eventId! } } })),
    refetchInterval: 5_000,
  })
}

export function useDeliveries(eventId: number | null) {
  return useQuery({
    queryKey: ['deliveries', eventId],
    enabled: eventId !== null,
    queryFn: async () => unwrap(await api.GET('/api/v1/events/{event_id}/deliveries', { params: { path: { event_id: eventId! } } })).deliveries,
    refetchInterval: 5_000,
  })
}

function useAlertMutation<A, R>(fn: (a: A) => Promise<R>) {
  const qc = useQueryClient()
  return useMutation({
    mutationFn: fn,
    onSettled: () => ['alerts', 'events', 'audit'].forEach((k) => qc.invalidateQueries({ queryKey: [k] })),
  })
}

export function useSaveAlert() {
  return useAlertMutation(async ({ id, body }: { id: string | null; body: AlertRuleBody }) =>
    id === null
      ? unwrap(await api.POST('/api/v1/alerts', { body }))
      : unwrap(await api.PUT('/api/v1/alerts/{rule_id}', { params: { path: { rule_id: id } }, body })),
  )
}

export function useDeleteAlert() {
  return useAlertMutation(async (id: string) => {
    const r = await api.DELETE('/api/v1/alerts/{rule_id}', { params: { path: { rule_id: id } } })
    if (!r.response.ok) unwrap(r)
  })
}

export function useTestAlert() {
  return useAlertMutation(async (id: string) => unwrap(await api.POST('/api/v1/alerts/{rule_id}/test', { params: { path: { rule_id: id } } })))
}
