// The worksheet's time controls, after Fishworks': back, forward, forward to now, pause, zoom,
// a unit per button (shift-click for one more), and an absolute range. Keys: ← → End, space
// (pause), + and - (zoom), n h d w m (minute … month; with shift, one more).
import { useEffect, useState, type MouseEvent } from 'react'
import { MenuButton } from '../components/MenuButton'
import { Popover } from '../components/Popover'
import { DateTimeInput } from '../components/DateTimeInput'
import { formatDateTime, localToUnix, unixToLocalInput } from '../lib/format'
import { absolute, back, forward, parseSpan, showUnits, spanLabel, toNow, UNITS, zoom } from '../state/time'
import { pauseTime, type TimeView } from '../state/url'

type Props = { view: TimeView; onChange: (v: TimeView) => void }

const nowS = () => Math.floor(Date.now() / 1000)

function RangePicker({ view, onChange, onClose }: Props & { onClose: () => void }) {
  const end = view.paused && view.at !== null ? view.at : nowS() - 2
  const [from, setFrom] = useState(unixToLocalInput(end - (parseSpan(view.range) ?? 600)))
  const [to, setTo] = useState(unixToLocalInput(end))
  const [error, setError] = useState<string | null>(null)
  function apply() {
    const a = localToUnix(from)
    const b = localToUnix(to)
    if (typeof a !== 'number' || typeof b !== 'number') return setError('give both a start and an end')
    const next = absolute(view, a, b, nowS())
    if (typeof next === 'string') return setError(next)
    onChange(next)
    onClose()
  }
  return (
    <Popover onClose={onClose} align="right" label="Show a range" className="form-popover" testId="range-picker">
      <form
        onSubmit={(e) => {
          e.preventDefault()
          apply()
        }}
      >
        <DateTimeInput label="From" value={from} onChange={setFrom} className="field-label" testId="range-from" />
        <DateTimeInput label="To" value={to} onChange={setTo} className="field-label" testId="range-to" />
        {error && (
          <div className="error" role="alert" data-testid="range-error">
            {error}
          </div>
        )}
        <div className="field-help">Local time. A range that ends now stays live.</div>
        <button className="button button-primary" type="submit" data-testid="range-apply">
          Show
        </button>
      </form>
    </Popover>
  )
}

/** `keys`: the page's keyboard shortcuts drive this toolbar (the worksheet's; not a chart's own). */
export function TimeToolbar({ view, onChange, keys = true }: Props & { keys?: boolean }) {
  const [picking, setPicking] = useState(false)
  const span = parseSpan(view.range) ?? 600
  const pause = () => onChange(view.paused ? toNow(view) : { ...view, paused: true, at: pauseTime(Date.now()) })
  const unit = (seconds: number, e: { shiftKey: boolean }) => onChange(showUnits(view, seconds, e.shiftKey))

  useEffect(() => {
    if (!keys) return
    function onKey(e: KeyboardEvent) {
      const t = e.target as HTMLElement | null
      // not while typing or pressing a control, and not a key something else on the page already took
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return
      if ((t && /^(INPUT|SELECT|TEXTAREA|BUTTON)$/.test(t.tagName)) || t?.isContentEditable) return
      const u = UNITS.find((x) => x.key === e.key.toLowerCase())
      const act: Record<string, () => void> = {
        ArrowLeft: () => onChange(back(view, nowS())),
        ArrowRight: () => onChange(forward(view, nowS())),
        End: () => onChange(toNow(view)),
        ' ': pause,
        '+': () => onChange(zoom(view, 0.5)),
        '=': () => onChange(zoom(view, 0.5)),
        '-': () => onChange(zoom(view, 2)),
      }
      const f = act[e.key] ?? (u ? () => unit(u.seconds, e) : null)
      if (f) {
        e.preventDefault()
        f()
      }
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  })

  const live = !view.paused
  const k = (key: string) => (keys ? ` (${key})` : '')
  return (
    <div className="toolbar-group" data-testid="time-toolbar">
      <div className="segmented" role="group" aria-label="Move in time">
        <button aria-label={`Back one range${k('←')}`} title={`Back one range${k('←')}`} data-testid="time-back" onClick={() => onChange(back(view, nowS()))}>
          ◀
        </button>
        <button
          className={view.paused ? 'active' : ''}
          aria-pressed={view.paused}
          aria-label={view.paused ? `Resume live updates${k('space')}` : `Pause${k('space')}`}
          title={view.paused ? `Resume live updates${k('space')}` : `Pause: stop live updates and keep this range${k('space')}`}
          data-testid="pause-button"
          onClick={pause}
        >
          ❚❚
        </button>
        <button aria-label={`Forward one range${k('→')}`} title={`Forward one range${k('→')}`} data-testid="time-forward" disabled={live} onClick={() => onChange(forward(view, nowS()))}>
          ▶
        </button>
        <button aria-label={`Forward to now${k('End')}`} title={`Forward to now, live${k('End')}`} data-testid="time-now" disabled={live} onClick={() => onChange(toNow(view))}>
          Now
        </button>
      </div>
      <div className="segmented" role="group" aria-label="Zoom">
        <button aria-label={`Zoom in: half the range${k('+')}`} title={`Zoom in: half the range${k('+')}`} data-testid="zoom-in" onClick={() => onChange(zoom(view, 0.5))}>
          +
        </button>
        <button aria-label={`Zoom out: twice the range${k('−')}`} title={`Zoom out: twice the range${k('−')}`} data-testid="zoom-out" onClick={() => onChange(zoom(view, 2))}>
          −
        </button>
      </div>
      <div className="segmented" role="group" aria-label="Show">
        {UNITS.map((u) => {
          const n = span % u.seconds === 0 ? span / u.seconds : 0
          return (
            <button
              key={u.id}
              className={n >= 1 && (n === 1 || !UNITS.some((x) => x.seconds > u.seconds && span % x.seconds === 0)) ? 'active' : ''}
              title={`Show a ${u.id}${k(u.key)}; shift-click for one more`}
              data-testid={`show-${u.id}`}
              onClick={(e: MouseEvent) => unit(u.seconds, e)}
            >
              {u.label}
            </button>
          )
        })}
      </div>
      <MenuButton label="Range…" open={picking} onToggle={() => setPicking(!picking)} testId="range-button">
        <RangePicker view={view} onChange={onChange} onClose={() => setPicking(false)} />
      </MenuButton>
      <span className="muted small" data-testid="time-shown" data-span={span}>
        {spanLabel(span)}
        {view.paused && view.at !== null ? ` until ${formatDateTime(view.at)}` : ', live'}
      </span>
    </div>
  )
}
