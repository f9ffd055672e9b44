// Admin: choose the Status page's Activity tiles (a statistic each, its title, unit and weather
// thresholds), add, remove and reorder them, or put back the built-in eight.
import { useState, type FormEvent } from 'react'
import type { MetricPublic, TilesConfig } from '../api/client'
import { useMetrics } from '../api/hooks'
import { useResetTiles, useSaveTiles, useTilesConfig } from '../api/tiles'
import { WEATHER } from '../charts/sparkline/model'
import { WeatherIcon, weatherLabel } from '../charts/sparkline/View'
import { ErrorLine } from '../components/ErrorLine'
import { MetricOptions } from '../components/MetricOptions'
import { formatDateTime } from '../lib/format'
import { fromDrafts, MAX_TILES, newDraft, toDraft, withMetric, type TileDraft } from '../lib/tiles'

function TileFields({ d, i, count, metrics, set, move, remove }: {
  d: TileDraft
  i: number
  count: number
  metrics: MetricPublic[]
  set: (d: TileDraft) => void
  move: (by: -1 | 1) => void
  remove: () => void
}) {
  const metric = metrics.find((m) => m.name === d.metric)
  const name = `tile ${i + 1}`
  return (
    <fieldset className="tile-form" data-testid="tile-form" data-tile={d.id}>
      <legend>
        Tile {i + 1}: {d.title || d.id} <span className="mono muted">({d.id})</span>
      </legend>
      <label className="field">
        <span>Title</span>
        <input value={d.title} maxLength={60} onChange={(e) => set({ ...d, title: e.target.value })} data-testid="tile-title-input" />
      </label>
      <label className="field tile-form-wide">
        <span>Statistic</span>
        <select
          value={d.metric}
          onChange={(e) => {
            const m = metrics.find((x) => x.name === e.target.value)
            if (m) set(withMetric(d, m))
          }}
          data-testid="tile-metric"
        >
          {!metric && <option value={d.metric}>{d.metric} (not in the catalog)</option>}
          <MetricOptions metrics={metrics} />
        </select>
      </label>
      <label className="field">
        <span>Opens broken down by</span>
        <select value={d.by} onChange={(e) => set({ ...d, by: e.target.value })} data-testid="tile-by">
          <option value="">(nothing: the total)</option>
          {metric?.dimensions.map((dim) => (
            <option key={dim} value={dim}>
              {dim}
            </option>
          ))}
        </select>
      </label>
      <label className="field tile-form-wide">
        <span>Filters</span>
        <input
          value={d.filters}
          placeholder="e.g. op=read; client=10.0.0.7"
          onChange={(e) => set({ ...d, filters: e.target.value })}
          data-testid="tile-filters"
        />
      </label>
      <label className="field">
        <span>Unit shown</span>
        <input value={d.unit} maxLength={20} onChange={(e) => set({ ...d, unit: e.target.value })} data-testid="tile-unit" />
      </label>
      <label className="field">
        <span>Scale from {metric?.unit ?? 'the metric’s unit'}</span>
        <input value={d.scale} inputMode="decimal" onChange={(e) => set({ ...d, scale: e.target.value })} data-testid="tile-scale" />
      </label>
      {metric?.dimensions.includes('cpu') && (
        <label className="tile-form-check">
          <input type="checkbox" checked={d.divideByCpus} onChange={(e) => set({ ...d, divideByCpus: e.target.checked })} data-testid="tile-per-cpu" />
          <span>percent of all CPUs</span>
        </label>
      )}
      <div className="tile-form-thresholds" role="group" aria-label={`Weather thresholds of ${name}`}>
        <span className="tile-form-caption">
          <WeatherIcon weather={WEATHER[0]} />
          {weatherLabel(WEATHER[0])} below the first threshold; each threshold, in {d.unit || 'the unit shown'}, starts a level:
        </span>
        {d.thresholds.map((t, k) => (
          <label key={k} className="field">
            <span className="tile-form-level">
              <WeatherIcon weather={WEATHER[k + 1]!} />
              {weatherLabel(WEATHER[k + 1]!)} from
            </span>
            <input
              value={t}
              inputMode="decimal"
              onChange={(e) => set({ ...d, thresholds: d.thresholds.map((x, j) => (j === k ? e.target.value : x)) })}
              data-testid={`tile-threshold-${k + 1}`}
            />
          </label>
        ))}
      </div>
      <div className="tile-form-actions">
        <button type="button" className="button small-button" onClick={() => move(-1)} disabled={i === 0} aria-label={`move ${name} earlier`}>
          ↑
        </button>
        <button type="button" className="button small-button" onClick={() => move(1)} disabled={i === count - 1} aria-label={`move ${name} later`}>
          ↓
        </button>
        <button type="button" className="button small-button button-danger" onClick={remove} disabled={count === 1} data-testid="tile-remove">
          Remove
        </button>
      </div>
    </fieldset>
  )
}

function Editor({ config, metrics, onClose }: { config: TilesConfig; metrics: MetricPublic[]; onClose: () => void }) {
  const save = useSaveTiles()
  const reset = useResetTiles()
  const [drafts, setDrafts] = useState(() => config.tiles.map(toDraft))
  const [formError, setFormError] = useState<string | null>(null)

  const update = (i: number, d: TileDraft) => setDrafts(drafts.map((x, j) => (j === i ? d : x)))
  const move = (i: number, by: -1 | 1) => {
    const next = [...drafts]
    ;[next[i], next[i + by]] = [next[i + by]!, next[i]!]
    setDrafts(next)
  }
  function submit(e: FormEvent) {
    e.preventDefault()
    const r = fromDrafts(drafts)
    setFormError('error' in r ? r.error : null)
    if ('tiles' in r) save.mutate(r.tiles, { onSuccess: onClose })
  }
  function putBack() {
    if (confirm('Put back the built-in tiles? The tiles shown now are replaced.')) reset.mutate(undefined, { onSuccess: onClose })
  }

  return (
    <form className="panel tiles-editor" onSubmit={submit} aria-label="Edit activity tiles" data-testid="tiles-editor">
      <div className="panel-head">
        <h2>Edit activity tiles</h2>
        <span className="small muted">
          Up to {MAX_TILES} tiles. Each shows a statistic’s newest second, its last 7 days, and a weather level from four ascending thresholds in the tile’s unit.{' '}
          {config.default ? 'These are the built-in tiles.' : `Set by ${config.set_by} ${formatDateTime(config.set_at ?? 0)}.`}
        </span>
      </div>
      <div className="tiles-editor-body">
        {drafts.map((d, i) => (
          <TileFields
            key={d.id}
            d={d}
            i={i}
            count={drafts.length}
            metrics={metrics}
            set={(x) => update(i, x)}
            move={(by) => move(i, by)}
            remove={() => setDrafts(drafts.filter((_, j) => j !== i))}
          />
        ))}
      </div>
      <div className="tiles-editor-foot">
        {formError && (
          <div className="error" role="alert" data-testid="tiles-form-error">
            {formError}
          </div>
        )}
        <ErrorLine error={save.error ?? reset.error} />
        <div className="form-actions">
          <button
            type="button"
            className="button"
            disabled={drafts.length >= MAX_TILES || !metrics[0]}
            onClick={() => setDrafts([...drafts, newDraft(metrics[0]!, drafts.map((d) => d.id))])}
            data-testid="tile-add"
          >
            Add tile ({drafts.length} of {MAX_TILES})
          </button>
          <button type="button" className="button button-warn" onClick={putBack} disabled={reset.isPending} data-testid="tiles-reset">
            Reset to defaults
          </button>
          <span className="tiles-editor-gap" />
          <button type="button" className="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="button button-primary" disabled={save.isPending} data-testid="tiles-save">
            Save tiles
          </button>
        </div>
      </div>
    </form>
  )
}

/** The editor once the saved tiles and the catalog are in; re-mounted when the tiles change elsewhere. */
export function StatusTilesEditor({ onClose }: { onClose: () => void }) {
  const config = useTilesConfig(true)
  const metrics = useMetrics()
  if (config.error || metrics.error) return <ErrorLine error={config.error ?? metrics.error} />
  if (!config.data || !metrics.data) return <div className="muted small">Loading the tiles…</div>
  return <Editor key={`${config.data.set_at}`} config={config.data} metrics={metrics.data.metrics} onClose={onClose} />
}
