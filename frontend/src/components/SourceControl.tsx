// Suspend / Resume of one source, with the request's progress, and the API's error.
import { useSourceControl } from '../api/hooks'
import type { SourcePublic } from '../api/client'
import { controlView } from '../lib/sources'

export type Control = ReturnType<typeof useSourceControl>

export function SourceControlButton({ source, pendingForMs, control }: { source: SourcePublic; pendingForMs: number; control: Control }) {
  const sending = control.isPending ? (control.variables?.action ?? null) : null
  const view = controlView(source, sending, pendingForMs)
  if (!view) return null
  return (
    <button
      className={`button small-button${view.pending ? ' pending' : ''}`}
      data-testid="source-control"
      data-action={view.action ?? 'pending'}
      disabled={view.action === null}
      aria-busy={view.pending}
      title={view.title}
      onClick={() => {
        if (view.action) control.mutate({ agent: source.agent, name: source.name, action: view.action })
      }}
    >
      {view.label}
    </button>
  )
}

/** The API's answer to a failed request, with its `detail`, until dismissed or the next attempt. */
export function ControlError({ source, control }: { source: SourcePublic; control: Control }) {
  if (!control.error) return null
  return (
    <div className="control-error" role="alert" data-testid="control-error">
      <span>
        Cannot {control.variables?.action ?? 'change'} {source.name}: {control.error.message}
      </span>
      <button className="icon-button" aria-label="Dismiss" onClick={() => control.reset()}>
        ×
      </button>
    </div>
  )
}
