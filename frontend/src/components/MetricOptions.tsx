import type { MetricPublic } from '../api/client'

/** The catalog's metrics as <option>s: the noun, then the name to type in a URL or an API call. */
export function MetricOptions({ metrics }: { metrics: MetricPublic[] }) {
  return metrics.map((m) => (
    <option key={m.name} value={m.name}>
      {m.noun} ({m.name})
    </option>
  ))
}
