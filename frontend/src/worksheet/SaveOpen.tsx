// Save the worksheet under a name, and open a saved one.
import { useMutation, useQueryClient } from '@tanstack/react-query'
import { useState } from 'react'
import { api, unwrap, type WorksheetPublic } from '../api/client'
import { useWorksheets } from '../api/hooks'
import { Popover } from '../components/Popover'
import { formatDateTime } from '../lib/format'
import { fromSaved, toWorksheetBody, type WorksheetState } from '../state/url'

export function SaveWorksheet({ ws, onSaved, onClose }: { ws: WorksheetState; onSaved: (w: WorksheetPublic) => void; onClose: () => void }) {
  const [name, setName] = useState(ws.name ?? `Worksheet ${formatDateTime(Date.now() / 1000).slice(0, 16)}`)
  const client = useQueryClient()
  const save = useMutation({
    mutationFn: async (asNew: boolean) => {
      const body = toWorksheetBody(ws, name.trim())
      const r =
        ws.id && !asNew
          ? await api.PUT('/api/v1/worksheets/{ws_id}', { params: { path: { ws_id: ws.id } }, body })
          : await api.POST('/api/v1/worksheets', { body })
      return unwrap(r)
    },
    onSuccess: (w) => {
      void client.invalidateQueries({ queryKey: ['worksheets'] })
      onSaved(w)
    },
  })
  return (
    <Popover onClose={onClose} align="right" label="Save worksheet" className="form-popover" testId="save-dialog">
      <form
        onSubmit={(e) => {
          e.preventDefault()
          if (name.trim()) save.mutate(false)
        }}
      >
        <div className="form-title">{ws.id ? 'Save worksheet' : 'Save worksheet as'}</div>
        <label className="field">
          <span>Name</span>
          <input value={name} onChange={(e) => setName(e.target.value)} maxLength={200} data-testid="save-name" />
        </label>
        <div className="field-help">
          {ws.statistics.length} statistic{ws.statistics.length === 1 ? '' : 's'}, range {ws.range}
        </div>
        {save.error && <div className="error">{save.error.message}</div>}
        <div className="form-actions">
          {ws.id && (
            <button type="button" className="button" disabled={!name.trim() || save.isPending} onClick={() => save.mutate(true)}>
              Save as new
            </button>
          )}
          <button type="submit" className="button button-primary" disabled={!name.trim() || save.isPending} data-testid="save-submit">
            {save.isPending ? 'Saving…' : 'Save'}
          </button>
        </div>
      </form>
    </Popover>
  )
}

export function OpenWorksheet({ onOpen, onClose }: { onOpen: (ws: WorksheetState) => void; onClose: () => void }) {
  const { data, error, isPending } = useWorksheets(true)
  const client = useQueryClient()
  const remove = useMutation({
    mutationFn: async (id: string) => {
      const r = await api.DELETE('/api/v1/worksheets/{ws_id}', { params: { path: { ws_id: id } } })
      if (!r.response.ok) unwrap(r)
    },
    onSuccess: () => client.invalidateQueries({ queryKey: ['worksheets'] }),
  })
  const clone = useMutation({
    mutationFn: async (w: WorksheetPublic) =>
      unwrap(await api.POST('/api/v1/worksheets', { body: toWorksheetBody(fromSaved(w).state, `Copy of ${w.name}`.slice(0, 200)) })),
    onSuccess: () => client.invalidateQueries({ queryKey: ['worksheets'] }),
  })
  const list = [...(data?.worksheets ?? [])].sort((a, b) => b.updated - a.updated)
  return (
    <Popover onClose={onClose} align="right" label="Open worksheet" className="menu open-menu" testId="open-dialog">
      <div className="menu-title">Saved worksheets</div>
      {isPending && <div className="menu-empty">Loading…</div>}
      {error && <div className="error">{error.message}</div>}
      {(remove.error ?? clone.error) && <div className="error">{(remove.error ?? clone.error)!.message}</div>}
      {data && list.length === 0 && <div className="menu-empty">Nothing saved yet.</div>}
      {list.map((w) => (
        <div key={w.id} className="menu-line" data-testid="saved-line" data-owner={w.owner}>
          <button className="menu-item" data-testid="saved-worksheet" onClick={() => onOpen(fromSaved(w).state)}>
            <span>{w.name}</span>
            <span className="menu-hint">
              {w.statistics?.length ?? 0} statistic{w.statistics?.length === 1 ? '' : 's'} · by {w.owner} · {formatDateTime(w.updated).slice(5, 16)}
            </span>
          </button>
          <button className="icon-button" title={`Clone ${w.name}`} aria-label={`Clone ${w.name}`} data-testid="clone-worksheet" onClick={() => clone.mutate(w)}>
            clone
          </button>
          <button
            className="icon-button"
            title={`Delete ${w.name}`}
            aria-label={`Delete ${w.name}`}
            data-testid="delete-worksheet"
            onClick={() => confirm(`Delete the worksheet ${w.name}?`) && remove.mutate(w.id)}
          >
            ✕
          </button>
        </div>
      ))}
    </Popover>
  )
}
