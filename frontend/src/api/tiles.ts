// The Status page's Activity tiles: read by everyone, set and reset by admins.
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { api, unwrap, type TileSpec } from './client'

export function useTilesConfig(enabled: boolean) {
  return useQuery({
    queryKey: ['status-tiles'],
    queryFn: async () => unwrap(await api.GET('/api/v1/status/tiles')),
    enabled,
  })
}

/** A change to the tiles: the status (which draws them) and the audit log are read again. */
function useTilesMutation<A>(fn: (a: A) => Promise<unknown>) {
  const qc = useQueryClient()
  return useMutation({
    mutationFn: fn,
    onSuccess: () => ['status-tiles', 'status', 'audit'].forEach((k) => qc.invalidateQueries({ queryKey: [k] })),
  })
}

export function useSaveTiles() {
  return useTilesMutation(async (tiles: TileSpec[]) => unwrap(await api.PUT('/api/v1/status/tiles', { body: { tiles } })))
}

export function useResetTiles() {
  return useTilesMutation(async () => unwrap(await api.DELETE('/api/v1/status/tiles')))
}
