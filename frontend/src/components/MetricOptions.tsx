// The catalog's metrics as <option>s, named as people read them, for any metric picker.
import type { MetricPublic } from '../api/client'

export function MetricOptions({ metrics }: { metrics: MetricPublic[] }) {
  return metrics.map((m) => (
    <option key={m.name} value={m.name}>
      {m.noun} ({m.name})
    </option>
  ))
}
