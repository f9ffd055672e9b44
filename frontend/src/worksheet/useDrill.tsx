// The drill-down menu of a card: from an element to a new chart with it as a filter.
import { useState } from 'react'
import type { MetricPublic } from '../api/client'
import { DrillMenu, type DrillTarget } from '../components/DrillMenu'
import { drillChoices, drillStatistic } from '../lib/drill'
import type { Statistic } from '../state/url'

export function useDrill(metric: MetricPublic | undefined, stat: Statistic, onOpen: (s: Statistic) => void) {
  const [target, setTarget] = useState<DrillTarget | null>(null)
  const menu =
    target && metric ? (
      <DrillMenu
        target={target}
        choices={drillChoices(metric, stat, target.dim)}
        onClose={() => setTarget(null)}
        onChoose={(c) => {
          setTarget(null)
          const element = target.dim ? { dim: target.dim, key: target.key } : null
          onOpen(drillStatistic(metric, stat, element, c.dim, target.extraWhere))
        }}
      />
    ) : null
  return { open: setTarget, menu }
}
