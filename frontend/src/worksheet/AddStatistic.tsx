// "Add statistic": a metric from the catalog and an optional breakdown.
import { useState } from 'react'
import type { MetricPublic } from '../api/client'
import { MetricOptions } from '../components/MetricOptions'
import { Popover } from '../components/Popover'
import { isHistogram } from '../lib/drill'
import { makeStatistic, type Statistic } from '../state/url'

interface Props {
  metrics: MetricPublic[]
  onAdd: (s: Statistic) => void
  onClose: () => void
}

export function AddStatistic({ metrics, onAdd, onClose }: Props) {
  const [name, setName] = useState(metrics[0]?.name ?? '')
  const [by, setBy] = useState('')
  const metric = metrics.find((m) => m.name === name)
  return (
    <Popover onClose={onClose} label="Add statistic" className="form-popover" testId="add-statistic">
      <form
        onSubmit={(e) => {
          e.preventDefault()
          if (!metric) return
          const hist = isHistogram(metric, by)
          onAdd(makeStatistic(metric.name, by || null, {}, hist ? 'heatmap' : 'area'))
        }}
      >
        <div className="form-title">Add statistic</div>
        <label className="field">
          <span>Metric</span>
          <select
            value={name}
            onChange={(e) => {
              setName(e.target.value)
              setBy('')
            }}
            data-testid="add-metric"
          >
            <MetricOptions metrics={metrics} />
          </select>
        </label>
        {metric && <div className="field-help">{metric.description}</div>}
        <label className="field">
          <span>Broken down by</span>
          <select value={by} onChange={(e) => setBy(e.target.value)} data-testid="add-by">
            <option value="">(nothing: the total)</option>
            {metric?.dimensions.map((d) => (
              <option key={d} value={d}>
                {d}
                {isHistogram(metric, d) ? ' (heat map)' : ''}
              </option>
            ))}
          </select>
        </label>
        <div className="form-actions">
          <button type="button" className="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="button button-primary" data-testid="add-submit">
            Add
          </button>
        </div>
      </form>
    </Popover>
  )
}
