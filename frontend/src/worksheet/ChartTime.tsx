// A chart's time: the worksheet's shared axis by default; unsynced, its own range with its own
// toolbar (kept in the link as `t:`), e.g. yesterday's incident beside the live load.
import type { ReactNode } from 'react'
import type { Statistic, TimeView } from '../state/url'
import { TimeToolbar } from './TimeToolbar'

export function useChartTime(
  stat: Statistic,
  worksheet: TimeView,
  onChange: (s: Statistic) => void,
): { view: TimeView; synced: boolean; button: ReactNode; toolbar: ReactNode } {
  const own = stat.time
  const view = own ?? worksheet
  const button = (
    <button
      className={`button small ${own ? 'button-warn' : ''}`}
      aria-pressed={!!own}
      data-testid="unsync-chart"
      title={
        own
          ? "On its own time axis, off the shared crosshair: click to follow the worksheet's time again"
          : "Follows the worksheet's time and shares its crosshair: click to give this chart its own time range"
      }
      onClick={() => {
        const { time: _, ...rest } = stat
        onChange(own ? rest : { ...stat, time: { range: worksheet.range, paused: worksheet.paused, at: worksheet.at } })
      }}
    >
      {own ? 'unsynced' : 'synced'}
    </button>
  )
  const toolbar = own && (
    <div className="card-time" data-testid="chart-time" role="group" aria-label="This chart's own time">
      <TimeToolbar view={own} keys={false} onChange={(t) => onChange({ ...stat, time: { range: t.range, paused: t.paused, at: t.at } })} />
    </div>
  )
  return { view, synced: !own, button, toolbar }
}
