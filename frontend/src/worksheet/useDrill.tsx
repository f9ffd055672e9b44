// The drill-down menu of a card: from an element to a new chart with it as a filter.
import { useState } from 'react'
import type { MetricPublic } from '../api/client'
import { DrillMenu, type DrillTarget } from '../components/DrillMenu'
import { drillChoices, drillStatistic } from '../lib/drill'
import { DIAG_RANGES } from '../lib/clients'
import { openClient } from '../pages/ClientPage'
import type { Statistic, WorksheetState } from '../state/url'

/** `view`: the worksheet's window, which a client's diagnosis opens with. */
export function useDrill(
  metric: MetricPublic | undefined,
  stat: Statistic,
  onOpen: (s: Statistic) => void,
  view?: Pick<WorksheetState, 'range' | 'paused' | 'at'>,
) {
  const [target, setTarget] = useState<DrillTarget | null>(null)
  const menu =
    target && metric ? (
      <DrillMenu
        target={target}
        choices={drillChoices(metric, stat, target.dim)}
        onClose={() => setTarget(null)}
        onDiagnose={
          target.dim === 'client' && metric.family === 'nfs' && target.key
            ? () => {
                setTarget(null)
                const range = DIAG_RANGES.some((r) => r.id === view?.range) ? view!.range : '10m'
                openClient({ client: target.key, range, at: view?.paused ? view.at : null })
              }
            : undefined
        }
        onChoose={(c) => {
          setTarget(null)
          const element = target.dim ? { dim: target.dim, key: target.key } : null
          const next = drillStatistic(metric, stat, element, c.dim, target.extraWhere)
          onOpen(target.time ? { ...next, time: target.time } : next)
        }}
      />
    ) : null
  return { open: setTarget, menu }
}
