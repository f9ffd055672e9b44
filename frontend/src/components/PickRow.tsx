// A table row that opens a menu where it was picked: by mouse at the pointer, by keyboard under the row.
import type { ReactNode } from 'react'

interface Props {
  onPick: (at: { x: number; y: number }) => void
  /** A shift-click does this instead of picking (e.g. highlight the element). */
  onShiftPick?: () => void
  className?: string
  title: string
  testId: string
  dataKey?: string
  children: ReactNode
}

export function PickRow({ onPick, onShiftPick, className, title, testId, dataKey, children }: Props) {
  return (
    <tr
      className={`legend-row ${className ?? ''}`}
      data-testid={testId}
      data-key={dataKey}
      tabIndex={0}
      title={title}
      onClick={(e) => (e.shiftKey && onShiftPick ? onShiftPick() : onPick({ x: e.clientX, y: e.clientY }))}
      onKeyDown={(e) => {
        if (e.key !== 'Enter' && e.key !== ' ') return
        e.preventDefault()
        const box = e.currentTarget.getBoundingClientRect()
        onPick({ x: box.left + 24, y: box.bottom })
      }}
    >
      {children}
    </tr>
  )
}

/** "top 10 of 9,925 elements" under a table that lists only the top ones; nothing when all are shown. */
export function TopNote({ shown, of }: { shown: number; of: number }) {
  if (of <= shown) return null
  return (
    <div className="legend-foot">
      top {shown} of {of.toLocaleString('en-US')} elements
    </div>
  )
}
